"""Remote-plugin shell: decorated entry points only, delegating to ttyoffer_nvim.

Handlers are ``rpc_export``s, so the rplugin manifest holds a single spec
(``TtyOfferVersion()``, without which pynvim would not register the plugin at
all) and does not change between versions; Lua talks to the host with
rpcrequest and rpcnotify. There is one export per method that
``ttyoffer_nvim/protocol.py`` declares, made from the declaration (``sync=True``
for the requests, where a value is returned), each handing its arguments to
the host (``TtyOfferHost.handle``), which takes them as declared.
"""

import inspect
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pynvim

# The Python core lives at the root of the checkout, three levels up.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ttyoffer_nvim import __version__, protocol  # noqa: E402
from ttyoffer_nvim.bridge import TtyOfferHost  # noqa: E402

Plugin = TypeVar("Plugin", bound=type)


def _export(name: str, message: protocol.Message) -> Callable[..., Any]:
    """The RPC export of method `name`: its arguments, in the declared
    order, to the host."""

    def handler(self: Any, *args: Any) -> Any:
        return self._host.handle(name, args)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = message.doc or None
    # What inspect (and a reader in a debugger) sees: the declared arguments.
    handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(arg, inspect.Parameter.POSITIONAL_ONLY) for arg in message.args]
    )
    exported: Callable[..., Any] = pynvim.rpc_export(
        protocol.method_name(name), sync=message.kind == "request"
    )(handler)
    return exported


def exports_of_the_protocol(cls: Plugin) -> Plugin:
    """One export per method of the protocol, put on the class before
    @pynvim.plugin marks its handlers (which it does once, when applied)."""
    for name, message in protocol.METHODS.items():
        setattr(cls, name, _export(name, message))
    return cls


@pynvim.plugin
@exports_of_the_protocol
class TtyOfferPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._host = TtyOfferHost(nvim)

    @pynvim.function("TtyOfferVersion", sync=True)
    def version(self, args: list[Any]) -> str:
        return __version__
