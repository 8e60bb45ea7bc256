package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The real file system, except that once armed, the rename of a checkpoint's end marker fails, or halts the JVM:
 * the checkpoint stops after its recovery files, start marker and page writes, before step 7.
 */
final class NoEndMarker implements FileIOFactory {
    private final FileIOFactory real = FileIOFactory.standard();
    /** When set, the JVM halts with this exit code instead of the rename failing (a real process death). */
    private final Integer haltWith;
    volatile boolean armed;

    /** Fails the rename with an IOException. */
    NoEndMarker() {
        this(null);
    }

    /** Halts the JVM with {@code haltWith} (null: fails the rename). */
    NoEndMarker(Integer haltWith) {
        this.haltWith = haltWith;
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return real.open(file, create);
    }

    @Override
    public boolean exists(Path file) {
        return real.exists(file);
    }

    @Override
    public void delete(Path file) throws IOException {
        real.delete(file);
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        if (armed && to.getFileName().toString().endsWith("-end.bin")) {
            if (haltWith != null) Runtime.getRuntime().halt(haltWith);
            throw new IOException("injected: no end marker");
        }
        real.atomicMove(from, to);
    }

    @Override
    public List<Path> list(Path d, String prefix) throws IOException {
        return real.list(d, prefix);
    }

    @Override
    public void createDirectories(Path d) throws IOException {
        real.createDirectories(d);
    }
}
