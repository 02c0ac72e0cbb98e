"""Prints about 13 MB, far more than a small disk holds."""

for i in range(200_000):
    print(f"line {i:06d} " + "x" * 56)
print("done", flush=True)
