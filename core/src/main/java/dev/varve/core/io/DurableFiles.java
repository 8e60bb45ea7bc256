package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Creating a file so that it survives power loss: a new file's name is durable only once its directory is
 * fsynced. The contents go to a temp file, which is fsynced and then renamed into place — the rename
 * ({@link FileIOFactory#atomicMove}) fsyncs the directory. A crash before the rename leaves only a temp file, which
 * {@link #isTemp} lets the owner recognise and delete; after it, the file is there whole.
 */
public final class DurableFiles {
    private static final String TEMP_SUFFIX = ".creating";

    private DurableFiles() {
    }

    /** Writes a new file's contents. */
    @FunctionalInterface
    public interface Contents {
        void writeTo(FileIO file) throws IOException;
    }

    /** Creates {@code file} holding {@code header}, durably, and opens it; the file must not exist. */
    public static FileIO create(FileIOFactory io, Path file, ByteBuffer header) throws IOException {
        return replace(io, file, f -> f.write(header.duplicate(), 0));
    }

    /**
     * Writes {@code file} whole, durably, replacing any file of that name in one rename, and opens it: a crash leaves
     * either the file as it was or the new one with all of {@code contents}, never a part of them.
     */
    public static FileIO replace(FileIOFactory io, Path file, Contents contents) throws IOException {
        Path tmp = tempOf(file);
        try (FileIO t = io.open(tmp, true)) {
            t.truncate(0);
            contents.writeTo(t);
            t.force();
        }
        io.atomicMove(tmp, file);
        return io.open(file, false);
    }

    /** The temp file {@link #replace} writes {@code file}'s contents to before the rename. */
    public static Path tempOf(Path file) {
        return file.resolveSibling(file.getFileName() + TEMP_SUFFIX);
    }

    /** True for a temp file left by a create that crashed before its rename. */
    public static boolean isTemp(Path file) {
        return file.getFileName().toString().endsWith(TEMP_SUFFIX);
    }
}
