package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Creating a file so that it survives power loss: a new file's name is durable only once its directory is
 * fsynced. The header goes to a temp file, which is fsynced and then renamed into place — the rename
 * ({@link FileIOFactory#atomicMove}) fsyncs the directory. A crash before the rename leaves only a temp file, which
 * {@link #isTemp} lets the owner recognise and delete.
 */
public final class DurableFiles {
    private static final String TEMP_SUFFIX = ".creating";

    private DurableFiles() {
    }

    /** Creates {@code file} holding {@code header}, durably, and opens it; the file must not exist. */
    public static FileIO create(FileIOFactory io, Path file, ByteBuffer header) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + TEMP_SUFFIX);
        try (FileIO t = io.open(tmp, true)) {
            t.truncate(0);
            t.write(header.duplicate(), 0);
            t.force();
        }
        io.atomicMove(tmp, file);
        return io.open(file, false);
    }

    /** True for a temp file left by a create that crashed before its rename. */
    public static boolean isTemp(Path file) {
        return file.getFileName().toString().endsWith(TEMP_SUFFIX);
    }
}
