"""`ncclscope serve [PATH | --live DIR] [--host 127.0.0.1] [--port 8050] [--token T]`: the dashboard."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("serve")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--live", "live", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A run folder in progress: re-analysed when its files change; alerts.jsonl shown as a banner.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback requires a token.")
@click.option("--port", default=None, type=click.IntRange(0, 65535),
              help="Port to listen on. Default 8050, or the next free one when another process holds 8050; "
                   "a port given here and taken is an error.")
@click.option("--token", default=None, help="Access token (generated and printed when binding beyond loopback).")
def command(path: Path | None, live: Path | None, host: str, port: int | None, token: str | None) -> None:
    """Serve the dashboard for a finished run (PATH: folder, files' folder or archive) or a live one (--live DIR).

    Without PATH, runs are uploaded from the browser. Never runs in debug mode.
    """
    if path is not None and live is not None:
        raise click.UsageError("give either PATH or --live DIR, not both")
    from ncclscope.dashboard.app import create_app, is_loopback, new_token

    from ..ports import DASHBOARD_PORT, free_port, port_taken, url

    if port is None:  # the default port, or the next free one: a second dashboard is not an error
        port, why = free_port(DASHBOARD_PORT, host)
        if why is not None:
            click.echo(f"ncclscope: port {DASHBOARD_PORT} on {host} is taken ({why}); using port {port}", err=True)
    elif port == 0:
        port = free_port(0, host)[0]  # the system's choice, known before the URL is printed
    else:
        taken = port_taken(port, host)
        if taken:  # say so before the app is built and a URL that belongs to another process is printed
            raise click.ClickException(f"cannot serve on {host} port {port}: {taken} (another process holds it?); "
                                       "choose another with --port, or leave --port out to take a free one")
    if not is_loopback(host) and not token:
        token = new_token()
    app = create_app(path=path, live=live, token=token, host=host)
    address = url(host, port) + (f"?token={token}" if token else "")
    click.echo(f"ncclscope dashboard: {address}", err=True)
    if token and not is_loopback(host):
        click.echo("every request needs the token; share this URL only with people who may read the logs", err=True)
    import signal

    def _stop(_signum: int, _frame: object) -> None:
        raise _Stopped

    signal.signal(signal.SIGTERM, _stop)  # `run --dashboard` ends us so: uploads are still deleted (finally)
    try:
        app.run(host=host, port=port, debug=False, dev_tools_ui=False, dev_tools_hot_reload=False,
                use_reloader=False)
    except _Stopped:
        pass
    except OSError as e:  # taken between the check and the bind
        raise click.ClickException(f"cannot serve on {host} port {port}: {e.strerror or e}") from None
    except SystemExit as e:  # werkzeug exits 1 after printing "Address already in use"
        raise click.ClickException(f"cannot serve on {host} port {port}: the address is in use") from e
    finally:
        close = getattr(app.server.config.get("ncclscope_store"), "close", None)
        if close is not None:
            close()  # uploads and unpacked archives are deleted on exit


class _Stopped(KeyboardInterrupt):
    """SIGTERM: leave ``app.run`` through its ``finally``."""
