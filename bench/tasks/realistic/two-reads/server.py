from settings import DEFAULTS


def port():
    return DEFAULTS["port"]
