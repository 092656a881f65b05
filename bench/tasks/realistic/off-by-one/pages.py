import sys


def page_count(items, per_page):
    """How many pages are needed to show `items` items, `per_page` on each page."""
    return items // per_page


if __name__ == "__main__":
    print(page_count(int(sys.argv[1]), int(sys.argv[2])))
