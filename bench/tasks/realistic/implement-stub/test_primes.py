from primes import is_prime


def test_is_prime():
    assert [n for n in range(20) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19]


if __name__ == "__main__":
    test_is_prime()
    print("ok")
