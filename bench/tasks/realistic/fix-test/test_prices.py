from prices import with_tax


def test_with_tax():
    assert with_tax(10.0) == 12.0
    assert with_tax(2.5) == 3.0


if __name__ == "__main__":
    test_with_tax()
    print("ok")
