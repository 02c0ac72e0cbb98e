import sys


def total(xs):
    # TODO: add the numbers up
    return 0


if __name__ == "__main__":
    print(total([float(a) for a in sys.argv[1:]]))
