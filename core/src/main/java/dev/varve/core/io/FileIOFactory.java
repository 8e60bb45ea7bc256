package dev.varve.core.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

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

    /** Renames atomically, replacing {@code to}, and makes the rename durable (fsync of the directory). */
    void atomicMove(Path from, Path to) throws IOException;

    /** Files directly inside {@code dir} whose name starts with {@code prefix}, sorted by name. */
    List<Path> list(Path dir, String prefix) throws IOException;

    /** Creates the directory (and parents) if missing and makes its entry durable. */
    void createDirectories(Path dir) throws IOException;

    /** The real file system. */
    static FileIOFactory standard() {
        return ChannelFileIOFactory.INSTANCE;
    }
}
