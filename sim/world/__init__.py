"""Models of the outside world, each built from the vendor document it names in its first lines."""
