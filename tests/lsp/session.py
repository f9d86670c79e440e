"""The part of a language-server test session every end-to-end test shares.

The server is ``python -m onnxlint lsp`` over stdio; the client announces VS
Code's capabilities (with the inlay hint refresh VS Code has had since 1.67) and
answers the requests the server sends it: watcher registration, lens and inlay
hint refreshes. What the server sent is recorded for the tests to look at.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from onnxlint.lsp.workspace import path_to_uri


def server_config(log_level: str = "warning") -> ClientServerConfig:
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "onnxlint", "lsp"],
        server_env={**os.environ, "ONNXLINT_LSP_LOG": log_level},
    )


@dataclass
class ServerRequests:
    """What the server asked of the client."""

    registrations: list[lsp.Registration] = field(default_factory=list)
    #: ``codeLens`` / ``inlayHint``, one per refresh request
    refreshes: list[str] = field(default_factory=list)
    #: the ``onnxlint/status`` notifications
    statuses: list[Any] = field(default_factory=list)
    #: the server's answer to ``initialize`` (its capabilities)
    initialized: lsp.InitializeResult | None = None


def answer_server_requests(client: LanguageClient) -> ServerRequests:
    """Handle (and record) what the server sends besides diagnostics and progress."""
    seen = ServerRequests()

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def _register(params: lsp.RegistrationParams) -> None:
        seen.registrations.extend(params.registrations)

    @client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params: None) -> None:
        seen.refreshes.append("codeLens")

    @client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def _hint_refresh(params: None) -> None:
        seen.refreshes.append("inlayHint")

    @client.feature("onnxlint/status")
    def _status(params: Any) -> None:
        seen.statuses.append(params)

    return seen


async def start_session(client: LanguageClient, ws: Path, options: Any = None) -> ServerRequests:
    """Answer the server's requests, then initialize a session on the folder ``ws``."""
    seen = answer_server_requests(client)
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.workspace is not None
    capabilities.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(
        refresh_support=True
    )
    seen.initialized = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities,
            root_uri=path_to_uri(ws),
            workspace_folders=[lsp.WorkspaceFolder(uri=path_to_uri(ws), name="ws")],
            initialization_options=options,
        )
    )
    return seen
