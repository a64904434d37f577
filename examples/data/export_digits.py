#!/usr/bin/python3
"""Writes digits.txt, the data of the C++ and Java examples
(examples/cpp, examples/java), from scikit-learn's digits
(1797 8x8 images, pixels 0..16; bundled with scikit-learn, no download).

One sample per line: the label (0-9), then the 64 pixels, one character each
(0-9 for 0..9, a-g for 10..16). Lines starting with '#' are comments.
C++ and Java have no scikit-learn, so the file is kept in the repository; rerun this
script to check or regenerate it:  /usr/bin/python3 export_digits.py digits.txt
"""
import sys

from sklearn.datasets import load_digits

DIGITS = "0123456789abcdefg"


def main(path):
    d = load_digits()
    with open(path, "w", encoding="ascii") as f:
        f.write("# scikit-learn's load_digits(): label, then 64 pixels 0..16 as 0-9a-g\n")
        for image, label in zip(d.data.astype(int), d.target):
            f.write(str(label) + "".join(DIGITS[v] for v in image) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "digits.txt")
