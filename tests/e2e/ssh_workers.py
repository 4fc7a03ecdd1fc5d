#!/usr/bin/python3
"""Many emulated TPU worker VMs in one process, over real SSH.

    python3 tests/e2e/ssh_workers.py --dir DIR --count N --base IP [--port P]
                                     [--authorized FILE] [--ready FILE]

Worker i listens on its own loopback address, IP + i (127.2.0.1 and up: any
127.x.y.z works on Linux without configuration), all on one port (--port, or
a free one picked), with its own ed25519 host key, and keeps its files in
DIR/w<i>, the layout of tests/e2e/sshd.sh that the Cloud TPU emulator's guest
agent writes to (tests/fakegcp/fg_agent.c, --worker-dir DIR):

    DIR/w<i>/home                  the login user's home (any user name)
    DIR/w<i>/home/.ssh/authorized_keys
                                   read at each login; --authorized FILE
                                   copies FILE there at start (else the
                                   emulator's guest agent fills it)
    DIR/w<i>/home/.ssh/environment NAME=VALUE lines added to every command's
                                   environment (sshd's PermitUserEnvironment)
    DIR/w<i>/hostkey, hostkey.pub  its host key (made once, kept)
    DIR/w<i>/screen                its screen sessions (SCREENDIR)
    DIR/w<i>/addr                  its address

The server is asyncssh (Debian's python3-asyncssh). What a worker does is
real: an exec request runs `/bin/sh -c COMMAND` in the worker's home as a
process of its own session (setsid, as sshd does), stdin and stdout on a
socket pair and stderr on a pipe (as OpenSSH without USE_PIPES), the exit
status or signal sent back when the process has ended and its output is
drained; a shell request runs /bin/sh. So tpuform's bootstrap, the workers'
screen sessions and jobs are real processes of this machine. The sftp
subsystem serves files with relative paths taken from the worker's home, as
sftp-server does; direct-tcpip (a bastion's jump) is allowed, except that a
destination address A for which the file DIR/stall-open.A exists is never
answered (a worker the bastion cannot reach, whose SYNs go unanswered: the
channel open waits). Environment of
a command: HOME, USER, LOGNAME, SHELL, PATH, LANG, SSH_CONNECTION,
SSH_CLIENT, SCREENDIR, TPUFORM_LIBTPU_LOCKFILE (DIR/w<i>/libtpu_lockfile),
TPUFORM_METADATA_URL (a closed port unless ~/.ssh/environment sets it: no
metadata server) and TPF_WORKERS_DIR=DIR, which marks every process a worker
started (their screen sessions too) so that they can be found and ended.

What is not a VM: the workers share this machine's process table, /tmp and
user; a worker's jobs live on while the harness runs and are ended when it
gets SIGTERM or SIGINT (every process whose environment names DIR).

One process, one thread: children are reaped on SIGCHLD (no thread or file
descriptor per child), so a command costs two descriptors while it runs and a
connection one; N listeners, N connections and N open commands fit in the
usual 20,000 descriptors up to about 4,500 workers (the soft limit is raised
to the hard one at start).

--ready FILE: written (the port, one line) once every worker listens. Exits 1
with a message when it cannot start (a port in use, a bad argument).
"""
import argparse
import asyncio
import ipaddress
import os
import random
import resource
import signal
import socket
import sys
import time
import warnings

# cryptography warns about the ciphers asyncssh still offers (Blowfish...)
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")
import asyncssh  # noqa: E402 (after the filter)

DEBUG = os.environ.get("SSH_WORKERS_DEBUG") == "1"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# pid -> future of its wait status; filled by spawn, resolved on SIGCHLD
_children = {}
# The commands' tasks: asyncssh drops its reference to a command's task when
# the client disconnects, and the task must live on until the command's
# output ends (it is read and dropped) and the command is reaped.
_commands = set()


def reap():
    """Collect every ended child (SIGCHLD handler)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fut = _children.pop(pid, None)
        if fut is not None and not fut.done():
            fut.set_result(status)


class Worker:
    """One emulated worker VM: its address, directory and host key."""

    def __init__(self, root, index, addr):
        self.index = index
        self.addr = addr
        self.dir = os.path.join(root, "w%d" % index)
        self.home = os.path.join(self.dir, "home")
        self.root = root
        self.key = None
        self._auth = (None, None)  # (mtime and size, SSHAuthorizedKeys)

    def prepare(self, authorized):
        for d in (self.home, os.path.join(self.home, ".ssh"), os.path.join(self.dir, "screen")):
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o700)
        with open(os.path.join(self.dir, "addr"), "w") as f:
            f.write(self.addr + "\n")
        ak = os.path.join(self.home, ".ssh", "authorized_keys")
        if authorized is not None:
            with open(ak, "wb") as f:
                f.write(authorized)
            os.chmod(ak, 0o600)
        path = os.path.join(self.dir, "hostkey")
        if os.path.exists(path):
            self.key = asyncssh.read_private_key(path)
        else:
            self.key = asyncssh.generate_private_key("ssh-ed25519", comment="worker%d" % self.index)
            self.key.write_private_key(path)
            os.chmod(path, 0o600)
            self.key.write_public_key(path + ".pub")

    def authorized(self):
        """authorized_keys as it is now (re-read when it changed)."""
        path = os.path.join(self.home, ".ssh", "authorized_keys")
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._auth[0] != stamp:
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    keys = asyncssh.import_authorized_keys(f.read())
            except (OSError, ValueError, asyncssh.KeyImportError):
                keys = None
            self._auth = (stamp, keys)
        return self._auth[1]

    def env(self, user, peer, local):
        env = {
            "HOME": self.home, "USER": user, "LOGNAME": user, "SHELL": "/bin/sh",
            "PATH": PATH, "LANG": "C.UTF-8",
            "SSH_CONNECTION": "%s %d %s %d" % (peer[0], peer[1], local[0], local[1]),
            "SSH_CLIENT": "%s %d %d" % (peer[0], peer[1], local[1]),
            "SCREENDIR": os.path.join(self.dir, "screen"),
            "TPUFORM_LIBTPU_LOCKFILE": os.path.join(self.dir, "libtpu_lockfile"),
            "TPUFORM_METADATA_URL": "http://127.0.0.1:9/none",
            "TPF_WORKERS_DIR": self.root,
        }
        try:
            with open(os.path.join(self.home, ".ssh", "environment"), encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        k, v = line.split("=", 1)
                        env[k] = v
        except OSError:
            pass
        return env


class Server(asyncssh.SSHServer):
    """Public key login against the worker's authorized_keys."""

    def __init__(self, worker):
        self.worker = worker
        self.conn = None

    def connection_made(self, conn):
        self.conn = conn

    def begin_auth(self, username):
        return True

    def public_key_auth_supported(self):
        return True

    def validate_public_key(self, username, key):
        keys = self.worker.authorized()
        if keys is None:
            return False
        peer = self.conn.get_extra_info("peername")
        return keys.validate(key, peer[0], peer[0]) is not None

    def connection_requested(self, dest_host, dest_port, orig_host, orig_port):
        # direct-tcpip: the worker as a bastion
        if os.path.exists(os.path.join(self.worker.root, "stall-open." + dest_host)):
            # never answered: the open waits (asyncssh awaits a session)
            return asyncio.sleep(3600)
        return True


def spawn(worker, argv, env, fd0, fd1, fd2):
    """Start argv in the worker's home in a session of its own; the future
    of its wait status."""
    # The child starts in this process's directory (posix_spawn has no
    # chdir in Python 3.11): one thread, so nothing runs between the two.
    os.chdir(worker.home)
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, fd0, 0),
                                            (os.POSIX_SPAWN_DUP2, fd1, 1),
                                            (os.POSIX_SPAWN_DUP2, fd2, 2)],
                         setsid=True, setsigmask=(),
                         setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD,
                                    signal.SIGINT, signal.SIGTERM))
    fut = _children[pid] = asyncio.get_running_loop().create_future()
    return fut


async def pump_in(process, writer):
    """The channel's stdin to the command, then EOF."""
    try:
        while True:
            data = await process.stdin.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, asyncssh.Error, asyncio.CancelledError):
        pass


async def pump_out(reader, stream):
    """The command's output to the channel until EOF; output the client no
    longer reads is read and dropped, so the command never blocks on it."""
    live = True
    while True:
        data = await reader.read(65536)
        if not data:
            return
        if live:
            try:
                stream.write(data)
                await stream.drain()
            except (OSError, asyncssh.Error):
                live = False


async def run_command(worker, process):
    """An exec or shell request: the command's life, then its status."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    _commands.add(task)
    if DEBUG:
        print("%.3f w%d request %s" % (time.time(), worker.index, (process.command or "")[-60:].replace("\n", " ")), flush=True)
    try:
        await command_life(worker, process, loop)
    except OSError as e:
        # out of descriptors, most likely: the client sees a failed command
        print("ssh_workers: w%d: %s" % (worker.index, e), file=sys.stderr, flush=True)
        try:
            process.exit(255)
        except (OSError, asyncssh.Error):
            pass
    finally:
        _commands.discard(task)


async def command_life(worker, process, loop):
    """run_command's body: spawn, pump, reap, report."""
    conn = process.channel.get_connection()
    user = conn.get_extra_info("username") or "root"
    env = worker.env(user, conn.get_extra_info("peername"), conn.get_extra_info("sockname"))
    argv = ["/bin/sh"] if process.command is None else ["/bin/sh", "-c", process.command]
    mine, theirs = socket.socketpair()
    er, ew = os.pipe()
    try:
        ended = spawn(worker, argv, env, theirs.fileno(), theirs.fileno(), ew)
    except OSError as e:
        theirs.close()
        mine.close()
        os.close(er)
        os.close(ew)
        process.stderr.write(("ssh_workers: cannot run /bin/sh: %s\n" % e).encode())
        process.exit(127)
        return
    theirs.close()
    os.close(ew)
    reader, writer = await asyncio.open_unix_connection(sock=mine)
    ereader = asyncio.StreamReader()
    etransport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(ereader), os.fdopen(er, "rb", 0))
    feed = asyncio.ensure_future(pump_in(process, writer))
    t0 = time.monotonic()
    if DEBUG:
        print("%.3f w%d start %s" % (time.time(), worker.index, (process.command or "")[-120:].replace("\n", " ")), flush=True)
    try:
        await asyncio.gather(pump_out(reader, process.stdout),
                             pump_out(ereader, process.stderr))
        status = await ended
    finally:
        feed.cancel()
        writer.close()
        etransport.close()
    if DEBUG:
        print("%.3f w%d end %s after %.1f s" % (time.time(), worker.index, status, time.monotonic() - t0), flush=True)
    try:
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name[3:]
            process.exit_with_signal(name, os.WCOREDUMP(status))
        else:
            process.exit(os.waitstatus_to_exitcode(status))
    except (OSError, asyncssh.Error):
        pass


def sftp_factory(workers):
    class WorkerSFTP(asyncssh.SFTPServer):
        """sftp-server in the worker's home: relative paths start there."""

        def __init__(self, chan):
            super().__init__(chan)
            addr = chan.get_connection().get_extra_info("sockname")[0]
            self.home = os.fsencode(workers[addr].home)

        def map_path(self, path):
            return path if path.startswith(b"/") else os.path.join(self.home, path)

        def reverse_map_path(self, path):
            return path
    return WorkerSFTP


async def listen(workers, port, sftp):
    """Every worker's listener on port; the servers (raises OSError)."""
    servers = []
    try:
        for w in workers.values():
            servers.append(await asyncssh.listen(
                host=w.addr, port=port, reuse_address=True,
                server_factory=(lambda w=w: Server(w)), server_host_keys=[w.key],
                process_factory=(lambda p, w=w: run_command(w, p)),
                sftp_factory=sftp, encoding=None, login_timeout=120,
                keepalive_interval=0))
    except OSError:
        for s in servers:
            s.close()
        raise
    return servers


def end_jobs(root):
    """End every process that a worker started (TPF_WORKERS_DIR=root in its
    environment): SIGTERM, up to 3 s, then SIGKILL."""
    mark = ("TPF_WORKERS_DIR=%s" % root).encode() + b"\0"
    me = os.getpid()
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0)):
        pids = []
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) == me:
                continue
            try:
                with open("/proc/%s/environ" % p, "rb") as f:
                    if mark in f.read():
                        pids.append(int(p))
            except OSError:
                pass
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        end = time.monotonic() + wait
        while pids and time.monotonic() < end:
            reap()
            pids = [p for p in pids if os.path.exists("/proc/%d" % p)]
            time.sleep(0.05)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--authorized")
    ap.add_argument("--ready")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    root = os.path.realpath(a.dir)
    base = ipaddress.IPv4Address(a.base)
    authorized = None
    if a.authorized:
        with open(a.authorized, "rb") as f:
            authorized = f.read()
    workers = {}
    for i in range(a.count):
        w = Worker(root, i, str(base + i))
        w.prepare(authorized)
        workers[w.addr] = w
    if DEBUG:
        import logging
        logging.basicConfig(stream=sys.stdout, level=logging.DEBUG, format="%(created).3f %(message)s")
        asyncssh.set_debug_level(1)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGCHLD, reap)
    stop = loop.create_future()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, lambda: stop.done() or stop.set_result(None))
    sftp = sftp_factory(workers)
    servers = None
    for attempt in range(20):
        port = a.port or random.randrange(20000, 60000)
        try:
            servers = await listen(workers, port, sftp)
            break
        except OSError as e:
            if a.port:
                sys.exit("ssh_workers: cannot listen on port %d: %s" % (port, e))
    if servers is None:
        sys.exit("ssh_workers: no free port after 20 tries")
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(a.ready + ".tmp", a.ready)
    await stop
    for s in servers:
        s.close()
    end_jobs(root)
    # the commands' output ends with their processes: let them finish
    if _commands:
        await asyncio.wait(list(_commands), timeout=2)
    for t in list(_commands):
        t.cancel()


if __name__ == "__main__":
    asyncio.run(main())
