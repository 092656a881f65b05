import argparse


def main():
    parser = argparse.ArgumentParser(description="Greet someone.")
    parser.add_argument("name", help="who to greet")
    args = parser.parse_args()
    message = f"Hello, {args.name}!"
    print(message)


if __name__ == "__main__":
    main()
