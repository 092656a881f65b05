from cart import calc_total

print(calc_total([3, 4, 5]))
