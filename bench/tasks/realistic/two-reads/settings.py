DEFAULTS = {
    "host": "127.0.0.1",
    "port": 8472,
    "debug": False,
}
