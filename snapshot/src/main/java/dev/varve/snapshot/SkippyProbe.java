package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.util.LongLongMap;

import java.nio.file.Path;

/**
 * A Skippy over a Maplog of its own, outside any archive: the route by which the benchmarks module measures SPT
 * construction ({@code SptBuildBenchmark}) on the archive's own code without reaching into this package. Not for
 * stores: nothing here is crash-safe beyond what {@link Skippy} itself is.
 */
public final class SkippyProbe implements AutoCloseable {
    /** Bytes of one Maplog entry. */
    public static final int MAPLOG_ENTRY_BYTES = MaplogDescriptor.ENTRY_SIZE;

    private final Skippy skippy;

    /** Opens (creating) a Skippy of {@code height} levels above a one-part Maplog in {@code dir}. */
    public SkippyProbe(Path dir, int height, int nodeEntries) {
        if (dir == null) throw new IllegalArgumentException("dir must not be null");
        this.skippy = new Skippy(FileIOFactory.standard(), dir, height, nodeEntries, MaplogFile.ONE_PART);
    }

    /** Appends the mapping {@code pageId -> address} of {@code snapshot}, as the archiver does. */
    public void append(long pageId, long snapshot, long address) {
        skippy.append(pageId, snapshot, address);
    }

    /** Mappings in the Maplog. */
    public long size() {
        return skippy.size();
    }

    /** Builds SPT from Maplog position {@code from} to {@code end} into {@code spt}, as a view's open does. */
    public void buildSpt(long from, LongLongMap spt, long end) {
        skippy.buildSpt(from, spt, end);
    }

    /** Bytes of every Skippy file, the Maplog included. */
    public long bytes() {
        return skippy.bytes();
    }

    @Override
    public void close() {
        skippy.close();
    }
}
