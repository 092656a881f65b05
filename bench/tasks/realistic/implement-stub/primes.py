def is_prime(n):
    """True if n is a prime number."""
    raise NotImplementedError
