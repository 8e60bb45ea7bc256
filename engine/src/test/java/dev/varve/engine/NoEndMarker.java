package dev.varve.engine;

import dev.varve.core.io.ForwardingFileIOFactory;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The real file system, except that once armed, the rename of a checkpoint's end marker fails, or halts the JVM:
 * the checkpoint stops after its recovery files, start marker and page writes, before step 7.
 */
final class NoEndMarker extends ForwardingFileIOFactory {
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
    public void atomicMove(Path from, Path to) throws IOException {
        if (armed && to.getFileName().toString().endsWith("-end.bin")) {
            if (haltWith != null) Runtime.getRuntime().halt(haltWith);
            throw new IOException("injected: no end marker");
        }
        delegate.atomicMove(from, to);
    }
}
