package dev.varve.engine;

import dev.varve.core.io.StorageException;
import dev.varve.core.spi.CheckpointListener;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * An OS lock on {@code varve.lock} in a directory: two processes (or two opens) never share a store directory, nor an
 * archive directory (two stores configured with the same {@code archivePath} would write the same snapshot log). A
 * read-only open takes a shared lock on the existing file (opened for reading, so nothing is created or changed):
 * it waits for no one, fails while a writer holds the store, and keeps a writer out while it reads. A directory
 * without the file was never opened by a writer, and a read-only open takes no lock there. Readers in one JVM share
 * one OS lock (the OS counts locks per process), counted here, so read-only opens and tools can nest.
 *
 * <p>Every lock this JVM holds is registered by directory, and a second lock of a directory is refused from that
 * registry, before any channel is opened: the OS drops all of a process's locks on a file when it closes <em>any</em>
 * channel of that file, so a refused attempt that opened and closed its own channel would free the directory for
 * another process while this one still writes it.
 */
final class StoreLock {
    /** The lock file in a store's directory (also in a transfer's target, which keeps it once it is a store). */
    static final String FILE = "varve.lock";

    /** The locks this JVM holds, by directory (absolute, normalised). */
    private static final Map<Path, StoreLock> HELD = new HashMap<>();

    private final FileChannel channel;
    private final FileLock lock;
    /** The locked file and its identity (device and inode), to tell when its name no longer leads to it. */
    private final Path file;
    private final Object fileKey;
    /** Its key in {@link #HELD}, and for a shared lock how many hold it (guarded by HELD). */
    private Path key;
    private int holders;

    private StoreLock(FileChannel channel, FileLock lock, Path file) throws IOException {
        this.channel = channel;
        this.lock = lock;
        this.file = file;
        this.fileKey = Files.readAttributes(file, BasicFileAttributes.class).fileKey();
    }

    /**
     * Fails when {@code varve.lock} was deleted or replaced since it was locked. The OS lock holds the file, not its
     * name: another process opening the directory now makes a new lock file, locks it and writes the same files.
     */
    void checkStillHeld(String what) {
        Object now;
        try {
            now = Files.readAttributes(file, BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            now = null;
        }
        if (fileKey != null && !fileKey.equals(now))
            throw new StorageException("the " + what + " directory's lock file was " + (now == null ? "deleted" : "replaced")
                    + " while the store was open: another process may open the directory and write it too, so this store stops "
                    + "writing; close it, make sure no other process has the directory open, and reopen it", file);
    }

    /**
     * A checkpoint listener that runs {@link #checkStillHeld} before any page of a checkpoint is written, and at the
     * periodic checkpoints of an idle store too: one that finds the lock gone before its next write stops before that
     * write lands in files another process may have opened meanwhile.
     */
    static CheckpointListener checkedAtCheckpoints(StoreLock store, StoreLock archive) {
        return new CheckpointListener() {
            @Override
            public void beforeStartMarker(long checkpointId, long markLsn) {
                check();
            }

            @Override
            public void whileIdle(long checkpointId, long markLsn) {
                check();
            }

            private void check() {
                store.checkStillHeld("store");
                archive.checkStillHeld("archive");
            }
        };
    }

    /** Locks {@code dir} for writing; {@code what} names it in errors ("store", "archive"). */
    static StoreLock acquire(Path dir, String what) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw cannotCreate(what, dir, e);
        }
        Path key = keyOf(dir);
        synchronized (HELD) {
            if (HELD.containsKey(key)) throw new IllegalStateException(what + " directory " + dir + " is already open in this JVM");
            StoreLock l = lock(dir, false, what);
            l.key = key;
            HELD.put(key, l);
            return l;
        }
    }

    /**
     * The failure to create the {@code what} directory {@code dir}. A symbolic link to a directory that is not there
     * (its disk not mounted) is said to be one: "already exists" alone would not tell why.
     */
    static StorageException cannotCreate(String what, Path dir, IOException e) {
        if (Files.isSymbolicLink(dir) && !Files.exists(dir)) {
            String target;
            try {
                target = Files.readSymbolicLink(dir).toString();
            } catch (IOException unreadable) {
                target = "a path";
            }
            return new StorageException("cannot create the " + what + " directory: it is a symbolic link to " + target
                    + ", which does not exist (a disk not mounted?); nothing was created there", dir, e);
        }
        if (Files.exists(dir) && !Files.isDirectory(dir))
            return new StorageException("cannot create the " + what + " directory: " + dir + " is a file, not a directory", dir, e);
        return new StorageException("cannot create the " + what + " directory", dir, e);
    }

    /** Whether {@code dir} is locked by an open of this JVM, for writing or read-only. */
    static boolean heldInThisJvm(Path dir) {
        Path key = keyOf(dir);
        synchronized (HELD) {
            return HELD.containsKey(key);
        }
    }

    /** The shared lock of a read-only open, or null when the store has no lock file. */
    static StoreLock acquireShared(Path dir) {
        return acquireShared(dir, "store");
    }

    /** {@link #acquireShared(Path)} of a directory {@code what} names in errors ("store", "archive"). */
    static StoreLock acquireShared(Path dir, String what) {
        Path key = keyOf(dir);
        synchronized (HELD) {
            StoreLock held = HELD.get(key);
            if (held != null) {
                if (!held.lock.isShared())
                    throw new IllegalStateException(what + " directory " + dir + " is already open for writing in this JVM; a read-only open needs it closed");
                held.holders++;
                return held;
            }
            if (!Files.exists(dir.resolve(FILE))) return null;
            StoreLock l = lock(dir, true, what);
            l.key = key;
            l.holders = 1;
            HELD.put(key, l);
            return l;
        }
    }

    /** The registry key of {@code dir}: its real path when it exists, so two spellings of one directory are one. */
    private static Path keyOf(Path dir) {
        Path abs = dir.toAbsolutePath().normalize();
        try {
            return Files.exists(abs) ? abs.toRealPath() : abs;
        } catch (IOException e) {
            return abs;
        }
    }

    /** Runs {@code work} under the shared lock of {@code dir} (see {@link #acquireShared}). */
    static <T> T whileShared(Path dir, Supplier<T> work) {
        StoreLock l = acquireShared(dir);
        try {
            return work.get();
        } finally {
            if (l != null) l.release();
        }
    }

    private static StoreLock lock(Path dir, boolean shared, String what) {
        Path file = dir.resolve(FILE);
        FileChannel ch = null;
        try {
            ch = shared ? FileChannel.open(file, StandardOpenOption.READ) : FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock l = ch.tryLock(0, Long.MAX_VALUE, shared);
            if (l == null) throw new IllegalStateException(what + " directory " + dir + (shared
                    ? " is open for writing in another process; a read-only open needs it closed"
                    : " is in use by another process"));
            return new StoreLock(ch, l, file);
        } catch (OverlappingFileLockException e) {
            closeQuietly(ch);
            throw new IllegalStateException(what + " directory " + dir + " is already open in this JVM", e);
        } catch (IOException e) {
            closeQuietly(ch);
            throw new StorageException("cannot lock the " + what + " directory", file, e);
        } catch (RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch == null) return;
        try {
            ch.close();
        } catch (IOException ignored) {
            // already failing; the first error is the one to report
        }
    }

    void release() {
        synchronized (HELD) { // the OS lock goes before another open of this JVM can take a new one
            if (lock.isShared() && --holders > 0) return;
            HELD.remove(key, this); // released twice: a later open's lock of the directory stays registered
            releaseOsLock();
        }
    }

    private void releaseOsLock() {
        try {
            if (lock.isValid()) lock.release();
            channel.close();
        } catch (IOException e) {
            throw new StorageException("cannot release the store lock", null, e);
        }
    }
}
