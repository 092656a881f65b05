"""Turn a CSV of hours worked into an invoice total."""

import csv
import sys

RATE = 95


def total(path):
    with open(path) as f:
        return sum(float(row["hours"]) for row in csv.DictReader(f)) * RATE


if __name__ == "__main__":
    print(f"Invoice total: {total(sys.argv[1]):.2f}")
