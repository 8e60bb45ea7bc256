package dev.varve.core.io;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The real file system without fsyncs of files and directories: for tests that close and reopen a store cleanly, or
 * copy its files as a {@code kill -9} leaves them, and never model a power cut. What such a test checks does not
 * depend on what reached the platter — a killed process leaves the page cache to the next one — while each fsync
 * waits for the disk: the log compaction tests, which run thousands of checkpoints, spent most of a minute on them.
 * Renames still make their directory durable (the real factory does that inside the move). Power cuts are
 * {@link FaultyFileIOFactory}'s, which simulates durability rather than asking the disk for it.
 */
public final class UnforcedFileIOFactory extends ForwardingFileIOFactory {
    /** The one instance: it holds no state. */
    public static final FileIOFactory INSTANCE = new UnforcedFileIOFactory();

    private UnforcedFileIOFactory() {
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return new ForwardingFileIO(delegate.open(file, create)) {
            @Override
            public void force() {
                // not asked of the disk: see the class comment
            }
        };
    }

    @Override
    public void forceDirectory(Path dir) {
        // not asked of the disk: see the class comment
    }
}
