"""`ctxtui serve`: the TUI or `ctxtui watch` in a browser, through textual-serve, on this machine only.

One concept a module, so each rule can be read (and reviewed) on its own:
  cli.py       the command's flags, help and exit codes; loads textual-serve only once it serves
  command.py   which ctxtui command a browser tab starts, as an argv list (never a string built by hand)
  loopback.py  the address: loopback only, bound before the server is built (so --port 0 works)
  access.py    who may talk to the server: the Host, the token in the path, the Origin (pure rules)
  server.py    textual-serve's Server mounted behind those rules, with its own quiet start-up

The security model is in docs/serve.md."""
