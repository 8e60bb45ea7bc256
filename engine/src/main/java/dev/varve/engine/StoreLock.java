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
 * An OS lock on {@code varve.lock} in a directory: two processes (or two opens) never share a store directory, nor an
 * archive directory (two stores configured with the same {@code archivePath} would write the same snapshot log).
 */
final class StoreLock {
    private final FileChannel channel;
    private final FileLock lock;

    private StoreLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** Locks {@code dir}; {@code what} names it in errors ("store", "archive"). */
    static StoreLock acquire(Path dir, String what) {
        Path file = dir.resolve("varve.lock");
        FileChannel ch = null;
        try {
            Files.createDirectories(dir);
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock l = ch.tryLock();
            if (l == null) throw new IllegalStateException(what + " directory " + dir + " is in use by another process");
            return new StoreLock(ch, l);
        } catch (OverlappingFileLockException e) {
            closeQuietly(ch);
            throw new IllegalStateException(what + " directory " + dir + " is already in use by a store open in this JVM", e);
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
        try {
            if (lock.isValid()) lock.release();
            channel.close();
        } catch (IOException e) {
            throw new StorageException("cannot release the store lock", null, e);
        }
    }
}
