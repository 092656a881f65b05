def calc_total(prices):
    return sum(prices)
