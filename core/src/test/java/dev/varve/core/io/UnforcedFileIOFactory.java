package dev.varve.core.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The real file system without fsyncs and msyncs of files and directories: for tests that close and reopen a store
 * cleanly, kill its process with {@code kill -9}, or copy its files as a kill leaves them, and never model a power
 * cut. What such a test checks does not depend on what reached the platter — a killed process leaves the page cache
 * to the next one — while each fsync waits for the disk: on the 2-vCPU VM the log compaction tests, which run
 * thousands of checkpoints, spent most of their minutes in them. Everything else, uncached (O_DIRECT) writes
 * included, is the real file system's; renames still make their directory durable (the real factory does that inside
 * the move). Power cuts are {@link FaultyFileIOFactory}'s, which simulates durability rather than asking the disk.
 */
public final class UnforcedFileIOFactory extends ForwardingFileIOFactory {
    /** The one instance: it holds no state. */
    public static final FileIOFactory INSTANCE = new UnforcedFileIOFactory();

    private UnforcedFileIOFactory() {
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return unforced(delegate.open(file, create));
    }

    @Override
    public Optional<FileIO> openUncached(Path file, int alignment) throws IOException {
        return delegate.openUncached(file, alignment).map(UnforcedFileIOFactory::unforced);
    }

    @Override
    public void forceDirectory(Path dir) {
        // not asked of the disk: see the class comment
    }

    private static FileIO unforced(FileIO file) {
        return new ForwardingFileIO(file) {
            @Override
            public void force() {
                // not asked of the disk: see the class comment
            }

            @Override
            public MappedRegion map(long position, int length) throws IOException {
                return withForce(delegate.map(position, length), (region, offset, len) -> { }); // not asked of the disk
            }
        };
    }
}
