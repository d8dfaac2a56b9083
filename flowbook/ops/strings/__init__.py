"""The string family: joins, splits, substrings, regexes, numbers, hashing."""
