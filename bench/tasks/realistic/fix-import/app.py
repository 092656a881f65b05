from textutil import shout

print(shout("ready"))
