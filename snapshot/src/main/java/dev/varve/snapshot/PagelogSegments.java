package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

/**
 * The segment files of a {@link Pagelog} volume as open finds them (the Pagelog's counterpart of
 * {@link MaplogParts}): numbered without a gap from the first one reclamation left, each header checked, and every
 * segment but the last full. A filled segment is forced by the next checkpoint's flush, not when the archiver begins
 * the next one, so a power loss can leave a short segment before the last: when its header records the segment size
 * (it is no other archiveSegmentSize), the segments after it hold nothing any checkpoint made durable — every
 * checkpoint forces them all — and are set aside for the recovery cut to delete; a mark that needs more than the short
 * one holds is refused as damage ({@code ArchiveLevel.checkDurable}). A short segment whose header records no size
 * (written before the field was) is refused as before.
 */
final class PagelogSegments {
    private static final int HEADER = PagelogDescriptor.HEADER_SIZE;

    /** Segment number → file, released (each opens again at its first use). */
    final TreeMap<Integer, PartFile> segments = new TreeMap<>();
    /** Segment number → its format version. */
    final TreeMap<Integer, Integer> versions = new TreeMap<>();
    /** Segments whose header records no segment size: the archiver forces such a segment when it moves on from it. */
    final Set<Integer> unsized = new HashSet<>();
    /** Segments found past one a power loss left short, newest first. */
    final List<Path> pastShortSegment = new ArrayList<>();

    private PagelogSegments() {
    }

    /**
     * The segments in {@code dir} of {@code recordsPerSegment} records of {@code pageSize} pages, under {@code budget};
     * one of another store than the one whose durable id is {@code storeId} (0: none yet) is refused.
     */
    static PagelogSegments open(FileIOFactory io, Path dir, int pageSize, long recordsPerSegment, DescriptorBudget budget, long storeId) {
        PagelogSegments found = new PagelogSegments();
        try {
            List<Path> files = new ArrayList<>();
            for (Path p : io.list(dir, PagelogDescriptor.FILE_PREFIX))
                if (!DurableFiles.isTemp(p)) files.add(p); // a segment creation cut short by a crash: deleted by recovery
            // in number order, not name order: past segment 99,999,999 the names grow a ninth digit, and
            // pagelog-100000000.log sorts before pagelog-99999999.log
            files.sort(Comparator.comparingInt(PagelogDescriptor::segmentOf));
            for (Path p : files) {
                int n = PagelogDescriptor.segmentOf(p);
                if (!found.segments.isEmpty() && n != found.segments.lastKey() + 1)
                    throw new CorruptionException("Pagelog segment is missing", dir.resolve(PagelogDescriptor.fileName(found.segments.lastKey() + 1)), 0);
                PartFile f = new PartFile(io, p, budget);
                found.segments.put(n, f);
                found.versions.put(n, found.checkHeader(f, n, pageSize, recordsPerSegment, storeId));
                f.release(); // an archive may have thousands of segments: one descriptor at a time
            }
            found.checkLengths(pageSize, recordsPerSegment);
            return found;
        } catch (IOException | RuntimeException e) {
            Closing.closeAll(e, found.segments.values());
            if (e instanceof RuntimeException r) throw r;
            throw new StorageException("cannot open the Pagelog: " + e.getMessage(), dir, e);
        }
    }

    /** The whole records a segment's file holds (past its header). */
    static long recordsIn(PartFile segment, int recordBytes) {
        try {
            return Math.max(0, (segment.size() - HEADER) / recordBytes);
        } catch (IOException e) {
            throw new StorageException("cannot size a Pagelog segment", segment.path(), e);
        }
    }

    private int checkHeader(FileIO f, int n, int pageSize, long recordsPerSegment, long storeId) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        if (f.read(h, 0) < HEADER) throw new CorruptionException("Pagelog segment header truncated", f.path(), 0);
        int version = PagelogDescriptor.checkHeader(h, f.path(), pageSize, n, (int) recordsPerSegment, storeId);
        if (PagelogDescriptor.recordedRecordsPerSegment(h) == 0) unsized.add(n);
        return version;
    }

    /** Every segment but the last full, or the segments after a short one that records its size set aside. */
    private void checkLengths(int pageSize, long recordsPerSegment) throws IOException {
        int recordBytes = PagelogDescriptor.recordBytes(pageSize);
        for (int seg : new ArrayList<>(segments.keySet())) {
            long records = recordsIn(segments.get(seg), recordBytes);
            boolean last = seg == segments.lastKey();
            if (!last && records < recordsPerSegment && !unsized.contains(seg)) {
                while (segments.lastKey() > seg) {
                    PartFile later = segments.pollLastEntry().getValue();
                    versions.remove(PagelogDescriptor.segmentOf(later.path()));
                    unsized.remove(PagelogDescriptor.segmentOf(later.path()));
                    pastShortSegment.add(later.path());
                    later.close();
                }
                return;
            }
            PagelogDescriptor.checkSegmentLength(segments.get(seg).path(), records, last, recordsPerSegment, pageSize);
        }
    }
}
