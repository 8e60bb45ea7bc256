package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One rank level's region of the segregated archive (Thresher): its Maplog with Skippy levels (VPT^i), mapping the
 * pre-states its snapshots need, and its Pagelog volume, holding the pre-states whose highest recording level is
 * this one. Maplog positions are handed out when a pre-state is captured, so they are known at a checkpoint mark.
 * Guarded by the archive's lock, except the archiver's writes.
 */
final class ArchiveLevel implements AutoCloseable {
    final int level;
    final Path dir;
    final Skippy maplog;
    final Pagelog volume;
    /** Maplog position of the next mapping recorded at this level. */
    long nextMapping;
    /** That position, and the volume's end, at the latest checkpoint mark. */
    long mappingsAtMark;
    long addressesAtMark;

    /** The level's files; {@code storeId} is the store's durable id (0 until a marker holds it), see {@link Pagelog}. */
    ArchiveLevel(FileIOFactory io, Path archiveDir, int level, int pageSize, int skippyLevels, int skippyNodeEntries, long segmentBytes,
                 MaplogFile.Missing missing, AtomicLong storeId) {
        this.level = level;
        this.dir = dirOf(archiveDir, level);
        if (!io.exists(dir)) missing = MaplogFile.Missing.CREATE; // a level the retention policy added (recovery checks the marks)
        try {
            io.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("cannot create an archive level directory", dir, e);
        }
        // a Maplog portion for about as many mappings as a Pagelog segment holds pages, in whole Skippy nodes
        long perSegment = Math.max(1, segmentBytes / pageSize);
        long partEntries = (perSegment + skippyNodeEntries - 1) / skippyNodeEntries * skippyNodeEntries;
        this.maplog = new Skippy(io, dir, skippyLevels, skippyNodeEntries, partEntries, missing, storeId);
        try {
            this.volume = new Pagelog(io, dir, pageSize, segmentBytes, storeId);
        } catch (RuntimeException e) {
            maplog.close();
            throw e;
        }
    }

    static Path dirOf(Path archiveDir, int level) {
        return archiveDir.resolve("level-" + level);
    }

    /**
     * Recovery, before any cut: throws a {@link CorruptionException} naming the file unless the Maplog (with its
     * Skippy levels) and the volume hold what a checkpoint mark recorded as durable.
     */
    void checkDurable(long mappings, long addresses) {
        maplog.checkDurable(mappings);
        if (addresses > volume.end())
            throw new CorruptionException("archive level " + level + " holds " + volume.end() + " pages but the recovered checkpoint mark made "
                    + addresses + " durable (a Pagelog segment was cut short or deleted)", volume.whereShort(addresses), 0);
    }

    /** Cuts both back to what they held at a checkpoint mark, and any torn tail (recovery, once the store is sound). */
    void cutTo(long mappings, long addresses) {
        maplog.truncate(mappings);
        volume.truncate(addresses);
        nextMapping = mappings;
        mappingsAtMark = mappings;
        addressesAtMark = addresses;
    }

    /**
     * Reads the image at {@code location} into {@code dst}: a volume record, or a record of {@code extent} (a diff
     * against a volume record, or a whole page).
     */
    static void read(ArchiveLevel[] levels, long location, long pageId, ByteBuffer dst, int dstOffset, RankedExtent.Reader extent) {
        if (ArchiveEncoding.isExtent(location))
            extent.read(ArchiveEncoding.extentOffset(location), pageId, dst, dstOffset, (base, page, into, at) -> readVolume(levels, base, page, into, at));
        else readVolume(levels, location, pageId, dst, dstOffset);
    }

    /** Reads the pre-state stored at archive {@code location} — in the volume of the level it names — into {@code dst}. */
    private static void readVolume(ArchiveLevel[] levels, long location, long pageId, ByteBuffer dst, int dstOffset) {
        levels[ArchiveEncoding.levelOf(location) - 1].volume.reader.read(ArchiveEncoding.addressOf(location), pageId, dst, dstOffset);
    }

    /** The whole record the pre-state at {@code location} is rebuilt from: what a ranked extent's base pins. */
    static long headOf(ArchiveLevel[] levels, long location, long pageId) {
        return levels[ArchiveEncoding.levelOf(location) - 1].volume.reader.headOf(ArchiveEncoding.addressOf(location), pageId);
    }

    /** True while the volume {@code location} names still holds it: written and not reclaimed. */
    static boolean holds(ArchiveLevel[] levels, long location) {
        return levels[ArchiveEncoding.levelOf(location) - 1].volume.holds(ArchiveEncoding.addressOf(location));
    }

    long bytes() {
        return maplog.bytes() + volume.bytes();
    }

    @Override
    public void close() {
        Closeables.closeAll(maplog, volume);
    }
}
