package dev.varve.engine;

import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Whether a directory holds a store, for the opens and tools that read one without creating it. A directory this
 * user may not read is said to be that — the store may well be there — not to hold no store, which sent operators
 * looking for a store that was never missing.
 */
final class StoreDirectory {
    private StoreDirectory() {
    }

    /**
     * Refuses {@code dir} unless it holds a {@code wal} or {@code pages} directory.
     *
     * @throws IllegalArgumentException it holds neither ({@code suffix} is added to the message)
     * @throws StorageException         this user may not look inside it
     */
    static void requireStore(Path dir, String suffix) {
        if (isDirectory(dir.resolve("wal")) || isDirectory(dir.resolve("pages"))) return;
        throw new IllegalArgumentException(dir + " holds no Varve store (no wal or pages directory)" + suffix);
    }

    private static boolean isDirectory(Path p) {
        try {
            return Files.readAttributes(p, BasicFileAttributes.class).isDirectory();
        } catch (AccessDeniedException e) {
            throw new StorageException("cannot read " + p + ": permission denied, on it or on a directory above it (run as a user who may read the store's files)", p, e);
        } catch (IOException e) {
            return false; // missing, or a path through a file: no store there
        }
    }
}
