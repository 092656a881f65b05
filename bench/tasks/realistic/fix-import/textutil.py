def yell(text):
    return text.upper() + "!"
