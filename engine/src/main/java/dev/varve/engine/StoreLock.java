package dev.varve.engine;

import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An OS lock on {@code varve.lock} in the store directory: two processes (or two opens) never share a store. A
 * read-only open takes a shared lock on the existing file (opened for reading, so nothing is created or changed):
 * it waits for no one, fails while a writer holds the store, and keeps a writer out while it reads. A directory
 * without the file was never opened by a writer, and a read-only open takes no lock there.
 */
final class StoreLock {
    private final FileChannel channel;
    private final FileLock lock;

    private StoreLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    static StoreLock acquire(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("cannot create the store directory", dir, e);
        }
        return lock(dir, false);
    }

    /** The shared lock of a read-only open, or null when the store has no lock file. */
    static StoreLock acquireShared(Path dir) {
        return Files.exists(dir.resolve("varve.lock")) ? lock(dir, true) : null;
    }

    private static StoreLock lock(Path dir, boolean shared) {
        Path file = dir.resolve("varve.lock");
        FileChannel ch = null;
        try {
            ch = shared ? FileChannel.open(file, StandardOpenOption.READ) : FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock l = ch.tryLock(0, Long.MAX_VALUE, shared);
            if (l == null) throw new IllegalStateException("store " + dir + (shared ? " is open for writing in another process; a read-only open needs it closed"
                    : " is open in another process"));
            return new StoreLock(ch, l);
        } catch (OverlappingFileLockException e) {
            closeQuietly(ch);
            throw new IllegalStateException("store " + dir + " is already open in this JVM", e);
        } catch (IOException e) {
            closeQuietly(ch);
            throw new StorageException("cannot lock the store directory", file, e);
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
        try {
            if (lock.isValid()) lock.release();
            channel.close();
        } catch (IOException e) {
            throw new StorageException("cannot release the store lock", null, e);
        }
    }
}
