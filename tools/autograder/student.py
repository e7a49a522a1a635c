"""The student's user on the grading machine: where it can leave things, a cap on its
memory, the cgroup that ends its processes, and the clean-up that removes everything it
left (run as root, by grade.py and between task files by remote.py).

What a process of that user can leave behind after it is killed:
- files, in a folder that user may write to. Those folders are found once, at start-up,
  by scanning the whole file system but /proc and /sys (`places`): /tmp, /var/tmp,
  /dev/shm, /run/lock, /dev/mqueue (POSIX message queues) and any other.
- System V IPC objects (shared memory, message queues, semaphore sets) and POSIX message
  queues: not files, and they outlive their processes. In the box (box.py) they live in
  an IPC namespace of its own and go with it; without it, /proc/sysvipc lists the System
  V ones with their owner (POSIX queues are seen only where /dev/mqueue is mounted).
- kernel keys, in the keyrings of its uid (`clear_keys`; /proc/key-users counts them).
- processes, in sessions of their own, set-user-ID ones among them (a process is the
  user's by its real uid). In the box they die with its PID namespace; the kill cgroup
  (`kill_cgroup`: cgroup.kill on v2, freeze then kill on v1) ends every one of them too.
`clean` ends them all and `leftovers` checks that nothing is left. `hold` keeps a second
grading from running as the same user at the same time. Neither raises, and
each step has a time limit: what cannot be removed is logged, and the grade stands. No
step runs in a process the student's could signal while one of them is alive.
"""

import ctypes
import fcntl
import os
import pwd
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

SKIPPED = ("/proc", "/sys")  # not files anyone leaves
IPC_KINDS = {"shm": "shared-memory segment", "msg": "message queue", "sem": "semaphore set"}
IPC_RMID = 0  # the "remove" command of shmctl, msgctl and semctl (Linux)
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
STEP_LIMIT = 5  # seconds for one step of the clean-up run in a process of its own
KEYRINGS = 2  # the keys every uid that used keys keeps: its user and user-session keyrings
# keyctl(2) on x86_64 and arm64, <asm/unistd.h>; KEYCTL_CLEAR empties a keyring
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}
KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = 7, -4, -5


class User:
    """The student's user: its name, ids, the folders it may write to, and what it owned
    there before grading began (`before`: paths and IPC objects, spared by the clean-up; on
    Gradescope, where lab-student is new, nothing)."""

    def __init__(self, name, places=(), before=()):
        entry = pwd.getpwnam(name)
        self.name, self.uid, self.gid = name, entry.pw_uid, entry.pw_gid
        self.places, self.before = list(places), set(before)

    def owned(self):
        """What it owns now: entries of its places, and IPC objects ("shm 7")."""
        found = []
        for place in self.places:
            try:
                with os.scandir(place) as entries:
                    found += [
                        entry.path
                        for entry in entries
                        if entry.stat(follow_symlinks=False).st_uid == self.uid
                    ]
            except OSError:
                continue
        found += [f"{kind} {number}" for kind, number, _ in ipc_objects(self.uid)]
        keys = kernel_keys(self.uid)
        return found + ([f"{keys - KEYRINGS} kernel keys"] if keys > KEYRINGS else [])


def places(uid, gid):
    """The folders user `uid` (group `gid`, no other groups) may write to, by their mode
    bits: the whole file system but /proc and /sys, with `find` (a second for 400,000
    entries, where Python's walk takes eight), or Python's walk where there is no find."""
    try:
        found = subprocess.run(
            [
                "find",
                "/",
                "(",
                "-path",
                "/proc",
                "-o",
                "-path",
                "/sys",
                ")",
                "-prune",
                "-o",
                "-type",
                "d",
                "(",
                "-user",
                str(uid),
                "-perm",
                "-u+w",
                "-o",
                "-group",
                str(gid),
                "-perm",
                "-g+w",
                "-o",
                "-perm",
                "-o+w",
                ")",
                "-print0",
            ],
            capture_output=True,
            timeout=120,
        ).stdout
        return sorted(p for p in found.decode("utf-8", "surrogateescape").split("\0") if p)
    except (OSError, subprocess.TimeoutExpired):
        pass
    found = []
    for folder, dirs, _ in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in SKIPPED]
        for d in dirs:
            path = os.path.join(folder, d)
            try:
                status = os.lstat(path)
            except OSError:
                continue
            bit = 0o200 if status.st_uid == uid else 0o020 if status.st_gid == gid else 0o002
            if stat.S_ISDIR(status.st_mode) and status.st_mode & bit:
                found.append(path)
    return sorted(found)


def remove_tree(parent, name, log):
    """Delete folder `name` of the open folder `parent` (a file descriptor) with all below
    it, whatever its depth, names or permissions, without following links and without
    recursion: one folder is open at a time, ".." leads back up (checked against each
    folder's recorded identity), and each level keeps only the names of the folders it
    still holds. Returns the number of entries removed."""
    removed = [0]
    try:
        here = os.open(name, OPEN_DIR, dir_fd=parent)
    except OSError as error:
        log.append(f"cannot open folder {name!r}: {error}")
        return 0
    levels = [(name, identity(here), folders_left(here, log, removed))]  # from the top down
    while True:
        folder, _, inside = levels[-1]
        if inside:
            child = inside.pop()
            try:
                inner = os.open(child, OPEN_DIR, dir_fd=here)
            except OSError as error:
                log.append(f"cannot open folder {child!r}: {error}")
                continue
            os.close(here)
            here = inner
            levels.append((child, identity(here), folders_left(here, log, removed)))
            continue
        levels.pop()
        if not levels:  # back at the top, now empty
            os.close(here)
            remove_folder(parent, name, log, removed)
            return removed[0]
        up = os.open("..", OPEN_DIR, dir_fd=here)
        os.close(here)
        here = up
        if identity(here) != levels[-1][1]:
            log.append(f"folder {levels[-1][0]!r} moved during its removal: stopped there")
            os.close(here)
            return removed[0]
        remove_folder(here, folder, log, removed)


def folders_left(fd, log, removed):
    """Delete every entry of the open folder `fd` that is not a folder; return the names of
    its folders."""
    folders = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
                    else:
                        os.unlink(entry.name, dir_fd=fd)
                        removed[0] += 1
                except OSError as error:
                    log.append(f"cannot remove {entry.name!r}: {error}")
    except OSError as error:
        log.append(f"cannot list a folder: {error}")
    return folders


def remove_folder(fd, name, log, removed):
    try:
        os.rmdir(name, dir_fd=fd)
        removed[0] += 1
    except OSError as error:
        log.append(f"cannot remove folder {name!r}: {error}")


def identity(fd):
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


def remove_owned(place, uid, log, spared=()):
    """Delete every entry of folder `place` that user `uid` owns (a folder with all below
    it); returns the number of entries removed. Folders of other owners are places of their
    own if that user may write to them."""
    removed = 0
    try:
        fd = os.open(place, OPEN_DIR)
    except OSError:
        return 0  # gone, or never there
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    status = entry.stat(follow_symlinks=False)
                    if status.st_uid != uid or entry.path in spared:
                        continue
                    if stat.S_ISDIR(status.st_mode):
                        removed += remove_tree(fd, entry.name, log)
                    else:
                        os.unlink(entry.name, dir_fd=fd)
                        removed += 1
                except OSError as error:
                    log.append(f"cannot remove {place}/{entry.name}: {error}")
    except OSError as error:
        log.append(f"cannot list {place}: {error}")
    finally:
        os.close(fd)
    return removed


def mount_queues():
    """Make sure the POSIX message queues of this IPC namespace show as files in
    /dev/mqueue (where the clean-up removes the student's, mq_unlink by another name);
    returns what was done, for the log."""
    if os.path.ismount("/dev/mqueue"):
        return "mounted already"
    try:
        os.makedirs("/dev/mqueue", exist_ok=True)
        subprocess.run(
            ["mount", "-t", "mqueue", "mqueue", "/dev/mqueue"],
            check=True,
            capture_output=True,
            timeout=STEP_LIMIT,
        )
        return "mounted now"
    except (OSError, subprocess.SubprocessError) as error:
        return f"cannot be mounted, so a queue may outlive the run: {error}"


def ipc_objects(uid):
    """[(kind, id, size in bytes or None)] of the System V IPC objects user `uid` owns or
    made, from /proc/sysvipc (the IPC namespace of this process)."""
    found = []
    for kind in IPC_KINDS:
        try:
            lines = Path("/proc/sysvipc", kind).read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(header, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")):
                number = row.get("shmid") or row.get("msqid") or row.get("semid")
                found.append((kind, int(number), int(row["size"]) if "size" in row else None))
    return found


def remove_ipc(kind, number):
    """IPC_RMID on one object: a segment still attached goes when its last process does
    (they are all ended by then)."""
    libc = ctypes.CDLL(None, use_errno=True)
    call = {
        "shm": lambda: libc.shmctl(number, IPC_RMID, None),
        "msg": lambda: libc.msgctl(number, IPC_RMID, None),
        "sem": lambda: libc.semctl(number, 0, IPC_RMID),
    }[kind]
    if call() != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def running(uid):
    """The pids of the running processes whose real uid is `uid` (a set-user-ID program it
    started counts: its effective uid is another; ended ones not yet reaped don't count)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = dict(
                line.split(":", 1)
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ":" in line
            )
            if int(status["Uid"].split()[0]) == uid and not status["State"].strip().startswith("Z"):
                found.append(int(pid))
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return found


def end_processes(user, group=None):
    """End every process of `user` (the kill cgroup `group` first, if there is one), as
    root; returns how many there were. Each round kills what `running` finds from here
    (root's signals can't be blocked or answered); only where some are still left does
    kill(-1) run as that user (it reaches all at once, even one forking now), with a time
    limit, so a process that stops it costs seconds, not the grade."""
    first = len(running(user.uid))
    if group:
        end_group(group)
    for _ in range(10):  # a bound, in case a process cannot be ended
        left = running(user.uid)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
        if running(user.uid):
            try:
                subprocess.run(
                    [
                        sys.executable,
                        "-I",
                        "-c",
                        "import os\ntry: os.kill(-1, 9)\nexcept ProcessLookupError: pass",
                    ],
                    user=user.uid,
                    group=user.gid,
                    extra_groups=[],
                    cwd="/",
                    timeout=STEP_LIMIT / 5,
                )
            except subprocess.TimeoutExpired:  # stopped by one of the user's: killed by run
                pass
    return first


def kernel_keys(uid):
    """How many kernel keys user `uid` owns, from /proc/key-users (0 if it never had one)."""
    try:
        lines = Path("/proc/key-users").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        owner, _, rest = line.partition(":")
        if owner.strip() == str(uid):
            return int(rest.split()[0])
    return 0


def clear_keys(user):
    """Empty the user and user-session keyrings of `user` (keys outlive processes and would
    carry data from one run into the next), run as that user once none of its processes
    is left (so none can stop it), with a time limit; returns how many keys went."""
    keys = kernel_keys(user.uid)
    if keys <= KEYRINGS:
        return 0
    if running(user.uid):
        raise RuntimeError("its processes are still running")
    number = KEYCTL_SYSCALL.get(os.uname().machine)
    if number is None:
        raise RuntimeError(f"no keyctl number known for {os.uname().machine}")
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"for ring in ({KEY_SPEC_USER_KEYRING}, {KEY_SPEC_USER_SESSION_KEYRING}):\n"
        f"    libc.syscall({number}, {KEYCTL_CLEAR}, ctypes.c_int(ring))"
    )
    subprocess.run(
        [sys.executable, "-I", "-c", code],
        user=user.uid,
        group=user.gid,
        extra_groups=[],
        cwd="/",
        timeout=STEP_LIMIT,
        capture_output=True,
    )
    deadline = time.monotonic() + STEP_LIMIT  # the kernel frees unlinked keys soon after
    while kernel_keys(user.uid) > KEYRINGS and time.monotonic() < deadline:
        time.sleep(0.05)
    return keys - kernel_keys(user.uid)


def clean(user, also=(), group=None):
    """End the processes of `user` (through its kill cgroup `group` too, if any), empty its
    keyrings, remove its IPC objects and every file it owns in its places, and delete the
    folders in `also` (its private temporary folder) whole. Returns (lines for the
    grader's log, what is left): never raises."""
    log, removed = [], {}
    try:
        n = end_processes(user, group)
        if n:
            removed["processes"] = n
    except Exception as error:  # noqa: BLE001 (logged; the grade stands)
        log.append(f"ending the processes failed: {error!r}")
    try:
        n = clear_keys(user)
        if n:
            removed["kernel keys"] = n
    except Exception as error:  # noqa: BLE001
        log.append(f"cannot clear the kernel keys: {error}")
    for kind, number, size in ipc_objects(user.uid):
        if f"{kind} {number}" in user.before:
            continue
        try:
            remove_ipc(kind, number)
            what = IPC_KINDS[kind] + (f" of {size} bytes" if size is not None else "")
            removed[what] = removed.get(what, 0) + 1
        except OSError as error:
            log.append(f"cannot remove {IPC_KINDS[kind]} {number}: {error}")
    for place in user.places:
        try:
            n = remove_owned(place, user.uid, log, user.before)
            if n:
                removed[f"entries in {place}"] = n
        except Exception as error:  # noqa: BLE001
            log.append(f"cleaning {place} failed: {error!r}")
    for folder in filter(os.path.lexists, also):
        try:
            parent = os.open(os.path.dirname(folder), OPEN_DIR)
            try:
                n = remove_tree(parent, os.path.basename(folder), log)
            finally:
                os.close(parent)
            removed[f"entries in {folder}"] = n
        except Exception as error:  # noqa: BLE001
            log.append(f"removing {folder} failed: {error!r}")
    left = leftovers(user, also)
    summary = ", ".join(f"{n} {what}" for what, n in removed.items()) or "nothing"
    log.insert(0, f"removed: {summary}; left: {'; '.join(left) or 'nothing'}")
    return log, left


def leftovers(user, also=()):
    """What `user` still has: running processes, IPC objects, entries it owns in its places,
    and the folders of `also` if they still exist."""
    left = [f"process {pid}" for pid in running(user.uid)]
    left += [what for what in user.owned() if what not in user.before]
    return left + [folder for folder in also if os.path.lexists(folder)]


def memory_cgroup(name, cap):
    """A memory cgroup `name` capped at `cap` bytes for all the student's processes together
    (cgroup v2, else v1's memory controller); returns its folder, or (None, why not)."""
    problems = []
    for mount, limit_file in memory_mounts():
        folder = Path(mount, name)
        try:
            folder.mkdir()
            Path(folder, limit_file).write_text(str(cap))
            for swap in ("memory.swap.max", "memory.memsw.limit_in_bytes"):
                if Path(folder, swap).exists():  # no swap beyond the cap (where there is swap)
                    try:
                        Path(folder, swap).write_text("0" if swap.endswith("max") else str(cap))
                    except OSError:
                        pass
            return folder, None
        except OSError as error:
            problems.append(f"{folder}: {error.strerror}")
            remove_cgroup(folder)
    return None, "; ".join(problems) or "no memory cgroup mounted"


def cgroup_mounts():
    """[(mount point, "cgroup2" or "cgroup", its mount options)] of the cgroup file systems
    in /proc/self/mounts, in its order; [] where it cannot be read."""
    try:
        mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return []
    return [
        (parts[1], parts[2], parts[3].split(","))
        for parts in mounts
        if len(parts) >= 4 and parts[2] in ("cgroup2", "cgroup")
    ]


def memory_mounts():
    """[(mount point, the file of its memory limit)]: cgroup v2 where its memory controller is
    on, then v1's memory hierarchy."""
    found = []
    for point, kind, options in cgroup_mounts():
        if kind == "cgroup2":
            try:
                if "memory" in Path(point, "cgroup.subtree_control").read_text().split():
                    found.insert(0, (point, "memory.max"))
            except OSError:
                continue
        elif "memory" in options:
            found.append((point, "memory.limit_in_bytes"))
    return found


def kill_cgroup(name):
    """A cgroup `name` that can end all its processes at once: cgroup v2's (its cgroup.kill),
    else v1's freezer (freeze, kill each, thaw); returns its folder, or (None, why not)."""
    problems = []
    for mount, needed in kill_mounts():
        folder = Path(mount, name)
        try:
            folder.mkdir()
            if Path(folder, needed).exists():
                return folder, None
            problems.append(f"{folder}: no {needed}")
        except OSError as error:
            problems.append(f"{folder}: {error.strerror}")
        remove_cgroup(folder)
    return None, "; ".join(problems) or "no cgroup v2 or v1 freezer mounted"


def kill_mounts():
    """[(mount point, the file that ends a cgroup's processes)]: v2 first, then v1's freezer."""
    found = []
    for point, kind, options in cgroup_mounts():
        if kind == "cgroup2":
            found.insert(0, (point, "cgroup.kill"))
        elif "freezer" in options:
            found.append((point, "freezer.state"))
    return found


def end_group(folder):
    """Kill every process in the kill cgroup `folder`, as one: v2 writes cgroup.kill; v1
    freezes the group (so none can fork or run), kills each, and thaws it so they die.
    At most STEP_LIMIT seconds."""
    if Path(folder, "cgroup.kill").exists():
        Path(folder, "cgroup.kill").write_text("1")
    else:
        state = Path(folder, "freezer.state")
        state.write_text("FROZEN")
        deadline = time.monotonic() + STEP_LIMIT
        while state.read_text().strip() != "FROZEN" and time.monotonic() < deadline:
            time.sleep(0.01)
        for pid in Path(folder, "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        state.write_text("THAWED")
    deadline = time.monotonic() + STEP_LIMIT
    while Path(folder, "cgroup.procs").read_text().split() and time.monotonic() < deadline:
        time.sleep(0.01)


def join_cgroup(folder, pid):
    """Put process `pid` (and so all it starts later) in the cgroup `folder`."""
    Path(folder, "cgroup.procs").write_text(str(pid))


def remove_cgroup(folder):
    """Remove the cgroup `folder` (its processes ended first, if it can end them)."""
    try:
        if Path(folder, "cgroup.kill").exists() or Path(folder, "freezer.state").exists():
            end_group(folder)
    except OSError:
        pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


# One grading per student user at a time: each ends every process of its user, so two
# gradings as one user would end each other's. The lock lives where only root may write.
LOCKS = Path("/run")
LOCK_FD = "AUTOGRADER_LOCK_FD"  # a lock a caller (grade_all, check_autograder) holds for us


class Busy(Exception):
    """Another grading holds the lock of the student's user."""


def hold(name):
    """Take the lock of the student's user `name` for the rest of this process (its file
    descriptor, which no child inherits), or raise Busy naming the grading that holds it.
    A caller that holds it already passes its descriptor down in LOCK_FD."""
    path = LOCKS / f"lab-autograder-{name}.lock"
    given = os.environ.get(LOCK_FD, "")
    try:
        ours = given.isdigit() and os.path.samestat(os.fstat(int(given)), os.stat(path))
    except OSError:
        ours = False
    if ours:
        fd = int(given)  # the same open file: flock below succeeds, it is ours already
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise Busy(
            f"another grading runs its student code as {name} ({holder}). Two gradings "
            "as one user would end each other's processes: wait for it to finish, or "
            "set AUTOGRADER_USER to another unprivileged user for this one."
        ) from None
    if str(fd) != given:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()}, since {time.strftime('%H:%M:%S')}".encode(), 0)
    return fd
