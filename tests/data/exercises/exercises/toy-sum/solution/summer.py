import sys


def total(xs):
    return sum(xs)


if __name__ == "__main__":
    print(f"{total([float(a) for a in sys.argv[1:]]):g}")
