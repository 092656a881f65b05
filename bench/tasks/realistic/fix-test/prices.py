TAX_RATE = 0.2


def with_tax(net):
    """The price with tax added, rounded to cents."""
    return round(net + TAX_RATE, 2)
