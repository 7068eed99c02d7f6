"""A function's prints and logs are collected per invocation while other threads swap sys.stdout around it, as
Click's CliRunner does for ff-ops run in-process (fire_and_forget/rehearsal/function_output.py)."""

from __future__ import annotations

import io
import logging
import sys
import threading
from contextlib import redirect_stdout

from fire_and_forget.rehearsal import function_output


def test_a_function_keeps_its_output_while_another_thread_swaps_stdout_and_closes_the_buffer() -> None:
    logger = logging.getLogger("tests.function_output")
    handler = logging.StreamHandler(sys.stdout)
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    entered, swapped, closed, done = (threading.Event() for _ in range(4))
    collected: list[str] = []
    errors: list[BaseException] = []

    def function() -> None:  # what a handler does on the interpreter's thread: print EMF, log
        try:
            function_output.route_log_handlers()
            with function_output.capture() as output:
                entered.set()
                swapped.wait(5)
                print('{"_aws": 1}')
                logger.info("while the CLI runs")
                closed.wait(5)
                print('{"_aws": 2}')
                logger.info("after the CLI closed its buffer")
            collected.append(output.getvalue())
        except BaseException as error:  # noqa: BLE001 - reported to the test thread
            errors.append(error)
        finally:
            done.set()

    try:
        thread = threading.Thread(target=function)
        thread.start()
        entered.wait(5)
        cli = io.StringIO()
        with redirect_stdout(cli):  # the CLI's window opens inside the function's invocation...
            print("the CLI's own line")
            swapped.set()
        text = cli.getvalue()
        cli.close()  # ... and closes its buffer before the invocation ends
        closed.set()
        done.wait(5)
        thread.join(5)
        print("the test thread prints to a stream that is open")
    finally:
        logger.removeHandler(handler)
    assert errors == []
    assert text == "the CLI's own line\n"
    assert collected == ['{"_aws": 1}\nwhile the CLI runs\n{"_aws": 2}\nafter the CLI closed its buffer\n']


def test_other_threads_print_and_log_where_they_did() -> None:
    own = io.StringIO()
    handler = logging.StreamHandler(own)
    logger = logging.getLogger("tests.function_output.other")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        function_output.route_log_handlers()
        with function_output.capture():
            pass
        buffer = io.StringIO()
        print("to a file", file=buffer)
        logger.warning("outside any function")
        assert buffer.getvalue() == "to a file\n"
        assert own.getvalue() == "outside any function\n"
    finally:
        logger.removeHandler(handler)
