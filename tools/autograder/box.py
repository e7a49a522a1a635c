"""The box the student's code runs in: fresh PID and IPC namespaces (run as root by remote.py).

    python -I box.py UID GID LIMITS CGROUP_PROCS... -- PYTHON -I serve.py
    python -I box.py --probe         (exit 0 if this machine can make the box, else say why)

This process (root) puts itself in the cgroups listed (their cgroup.procs files), so all it
starts is counted and can be ended there, then leaves its IPC namespace and starts the
first process of a new PID namespace: a root "init" that starts the command as UID/GID (no
other groups), with the resource LIMITS (JSON {"RLIMIT_AS": [soft, hard], ...}), reaps
every orphan, and ends when the command ends. When that init ends, for whatever reason
(it is killed with this process), the kernel kills every process in its namespace: the
student's children, those in sessions of their own, and set-user-ID programs they ran.
The IPC namespace goes with its last process, and with it every System V object and POSIX
message queue made in it. Neither this process nor the init can be signalled by the
student's processes (they are root's), and SIGUSR1 (interrupt the call) is passed on down.
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWIPC = 0x08000000  # <linux/sched.h>
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>: a signal for this process when its parent ends
LIBC = ctypes.CDLL(None, use_errno=True)


def unshare():
    """Leave this process's IPC namespace now, and its PID namespace for its next child."""
    if LIBC.unshare(CLONE_NEWPID | CLONE_NEWIPC) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"unshare(CLONE_NEWPID | CLONE_NEWIPC): {os.strerror(number)}")


def forward(pid):
    """SIGUSR1 to this process goes on to `pid` (the grader's interrupt of a call)."""
    signal.signal(signal.SIGUSR1, lambda signum, frame: os.kill(pid, signal.SIGUSR1))


def run_as(uid, gid, limits, command):
    """In the child: drop root for the student's user, set its limits, run `command`."""
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    for name, (soft, hard) in limits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails instead
    os.execv(command[0], command)


def init(uid, gid, limits, command):
    """PID 1 of the new namespace: start `command`, reap every process left to it, end
    (taking the whole namespace with it) when `command` ends or this process's parent does."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    child = os.fork()
    if child == 0:
        run_as(uid, gid, limits, command)
    forward(child)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the wire is the command's alone: its end is the command's end
        os.dup2(devnull, fd)
    while True:
        pid, status = os.wait()
        if pid == child:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def probe():
    """Exit 0 if a PID and an IPC namespace can be made here (its first process is pid 1)."""
    try:
        unshare()
    except OSError as error:
        print(error)
        return 1
    child = os.fork()
    if child == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print("the first process of a new PID namespace is not pid 1")
        return 1
    return 0


def main(argv):
    if argv == ["--probe"]:
        return probe()
    split = argv.index("--")
    uid, gid, limits, *cgroups = argv[:split]
    for procs in cgroups:  # before any child: all it starts is in these too
        with open(procs, "w") as out:
            out.write(str(os.getpid()))
    unshare()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # until there is a process to pass it to
    child = os.fork()
    if child == 0:
        init(int(uid), int(gid), json.loads(limits), argv[split + 1 :])
    forward(child)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) & 0xFF


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
