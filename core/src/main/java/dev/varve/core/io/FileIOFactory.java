package dev.varve.core.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Opens, lists, renames and deletes the store's files. The default, {@link #standard()}, goes through
 * {@link java.nio.channels.FileChannel}.
 */
public interface FileIOFactory {
    /** Opens {@code file} read-write, creating it when {@code create} is set. */
    FileIO open(Path file, boolean create) throws IOException;

    /** True when the file exists. */
    boolean exists(Path file);

    /** Deletes the file if it exists. */
    void delete(Path file) throws IOException;

    /**
     * Deletes the file if it exists and makes the deletion durable before returning (fsync of its directory), for
     * files deleted in an order that open relies on — a log's parts, oldest first. Without it a power cut may keep a
     * later deletion and lose an earlier one, and the directory then shows a gap that reads as a lost part.
     */
    default void deleteDurably(Path file) throws IOException {
        delete(file);
        forceDirectory(file.toAbsolutePath().getParent());
    }

    /**
     * How many names the file has (its hard links), or 0 when the file system does not tell: a file with other names
     * than the store's (a backup made of hard links) must not be truncated when the store replaces it.
     */
    default int linkCount(Path file) throws IOException {
        try {
            return ((Number) java.nio.file.Files.getAttribute(file, "unix:nlink")).intValue();
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            return 0;
        }
    }

    /**
     * Makes the entries created, renamed and deleted in {@code dir} so far durable (fsync of the directory): for a file
     * that something durable will name before the file's own rename would (a WAL segment prepared under its temporary
     * name, which the seal of the segment before it names).
     */
    default void forceDirectory(Path dir) throws IOException {
        syncDirectory(dir);
    }

    /** Renames atomically, replacing {@code to}, and makes the rename durable (fsync of the directory). */
    void atomicMove(Path from, Path to) throws IOException;

    /** Files directly inside {@code dir} whose name starts with {@code prefix}, sorted by name. */
    List<Path> list(Path dir, String prefix) throws IOException;

    /** Creates the directory (and parents) if missing and makes its entry durable. */
    void createDirectories(Path dir) throws IOException;

    /**
     * Opens an existing file for writes that bypass the operating system's page cache (Linux {@code O_DIRECT}): for
     * bulk writes nobody reads back soon, which would otherwise be copied into the cache and crowd it. Every write's
     * buffer address, file offset and length must then be multiples of {@code alignment}. Empty when the platform,
     * the file system or this factory does not offer that for {@code alignment}: the caller writes through
     * {@link #open} instead.
     */
    default Optional<FileIO> openUncached(Path file, int alignment) throws IOException {
        return Optional.empty();
    }

    /**
     * Whether the files this factory opens may serve {@link FileIO#readMapped}: false by default, and before Java 22,
     * so that a caller does not ask on every read of a file that never maps.
     */
    default boolean mapsSealedFiles() {
        return false;
    }

    /** The real file system. */
    static FileIOFactory standard() {
        return ChannelFileIOFactory.INSTANCE;
    }

    /**
     * Makes the entries created, renamed and deleted in {@code dir} durable (an fsync of the directory on Linux; a
     * no-op where directories cannot be opened), whatever the caller's interrupt status, which it keeps.
     */
    static void syncDirectory(Path dir) throws IOException {
        ChannelFileIOFactory.syncDirectory(dir);
    }
}
