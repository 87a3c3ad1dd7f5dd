"""A stand-in for a Textual app under textual-serve: the prelude line, one data packet, then it
waits for the server to say anything (the quit it sends on close) and exits. Lets the websocket
tests see a process really started without the cost of a TUI."""
import os
import sys

GREETING = b"hello from the served app"


def main() -> None:
    out = sys.stdout.buffer
    out.write(b"__GANGLION__\n")
    out.write(b"D" + len(GREETING).to_bytes(4, "big") + GREETING)
    pid = str(os.getpid()).encode()
    out.write(b"D" + len(pid).to_bytes(4, "big") + pid)        # so a test can see the process end
    out.flush()
    sys.stdin.buffer.read(1)


if __name__ == "__main__":
    main()
