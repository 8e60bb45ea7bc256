package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The part files of one Maplog-format log as open finds them ({@link MaplogFile}), reading only: each part's header
 * checked; of a one-part log found with several, the newest alone, the older ones — a rewrite a crash cut short
 * replaced them — set aside ({@link #superseded}); a gap between parts is a lost part, and the parts after one left
 * short — by a power loss, or a part of no entries created ahead of need ({@link NextPart}) after a crash — are set
 * aside too ({@link #pastShortPart}). Set-aside parts are never read; recovery deletes them.
 */
final class MaplogParts {
    private static final Logger LOG = LoggerFactory.getLogger(MaplogParts.class);
    private static final int HEADER = MaplogDescriptor.HEADER_SIZE;
    private static final int ENTRY = MaplogDescriptor.ENTRY_SIZE;

    /** Position of each part's first entry → the part, the last one open; empty when the log has no part. */
    final TreeMap<Long, PartFile> parts = new TreeMap<>();
    /** Parts of a one-part log found beside a newer part a rewrite wrote whole. */
    final List<Path> superseded = new ArrayList<>();
    /**
     * Parts found after a part left short (a power loss lost its unforced entries while the next part's creation was
     * durable, or the next part was created ahead of need): they hold nothing any checkpoint mark made durable.
     */
    final List<Path> pastShortPart = new ArrayList<>();
    /** True when the header holds checkpoint marks of an older archive (stored as uplinks). */
    boolean legacyMarks;
    /** Each part's size in bytes as open found it, by its first position. */
    private final Map<Long, Long> sizes = new HashMap<>();

    private final Path path;
    private final Kind kind;
    private final int level;
    private final int nodeEntries;
    private final long partEntries;

    private MaplogParts(Path path, Kind kind, int level, int nodeEntries, long partEntries) {
        this.path = path;
        this.kind = kind;
        this.level = level;
        this.nodeEntries = nodeEntries;
        this.partEntries = partEntries;
    }

    /**
     * The parts of log {@code path} of {@code partEntries} entries each ({@link MaplogFile#ONE_PART}: one part), opened
     * under {@code budget}; a part of another store than the one whose durable id is {@code storeId} (0: none yet) is
     * refused.
     */
    static MaplogParts open(FileIOFactory io, Path path, Kind kind, int level, int nodeEntries, long partEntries, DescriptorBudget budget,
                            long storeId) {
        MaplogParts found = new MaplogParts(path, kind, level, nodeEntries, partEntries);
        try {
            String name = path.getFileName().toString();
            for (Path p : io.list(path.getParent(), name)) {
                long first = MaplogDescriptor.firstOf(p.getFileName().toString(), name);
                if (first < 0 || DurableFiles.isTemp(p)) continue; // a part creation cut short: deleted by recovery
                PartFile f = new PartFile(io, p, budget);
                found.parts.put(first, f);
                found.checkHeader(f, storeId);
                found.sizes.put(first, f.size()); // with the header: checkContiguous needs no second open
                f.release(); // a log may have thousands of parts: one descriptor at a time
            }
            if (!found.parts.isEmpty()) {
                found.setAsideSuperseded();
                found.checkContiguous();
            }
            return found;
        } catch (IOException | RuntimeException e) {
            Closing.closeAll(e, found.parts.values());
            if (e instanceof RuntimeException r) throw r;
            throw new StorageException("cannot open archive file: " + e.getMessage(), path, e);
        }
    }

    /**
     * The part of log {@code path} that holds its oldest entries: the file of that name until reclamation or a rewrite
     * replaced it by a later part. Null when the log has none (temp files of a creation cut short do not count).
     */
    static Path firstPart(FileIOFactory io, Path path) throws IOException {
        String name = path.getFileName().toString();
        Path first = null;
        long at = Long.MAX_VALUE;
        for (Path p : io.list(path.getParent(), name)) {
            long position = MaplogDescriptor.firstOf(p.getFileName().toString(), name);
            if (position >= 0 && position < at && !DurableFiles.isTemp(p)) {
                first = p;
                at = position;
            }
        }
        return first;
    }

    /** The file of log {@code path}'s part whose first entry is at position {@code first}. */
    static Path partPath(Path path, long first) {
        return path.resolveSibling(MaplogDescriptor.partFileName(path.getFileName().toString(), first));
    }

    private void checkHeader(FileIO f, long storeId) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        if (f.read(h, 0) < HEADER) throw new CorruptionException("archive file header truncated", f.path(), 0);
        MaplogDescriptor.checkHeader(h, f.path(), kind, level, storeId);
        legacyMarks = kind.isLegacyMarks(h.getInt(MaplogDescriptor.KIND_OFFSET), h.getInt(MaplogDescriptor.LEVEL_OFFSET));
        int written = h.getInt(MaplogDescriptor.NODE_ENTRIES_OFFSET);
        if (written != nodeEntries)
            throw new IllegalArgumentException("the archive was written with skippyNodeEntries=" + written + " but the store is configured with "
                    + nodeEntries + " [file " + f.path() + "]");
    }

    /** A log of one part found with several: the newest was written whole by a rewrite a crash cut short. */
    private void setAsideSuperseded() throws IOException {
        if (partEntries != MaplogFile.ONE_PART) return;
        while (parts.size() > 1) {
            PartFile older = parts.pollFirstEntry().getValue();
            superseded.add(older.path());
            older.close();
        }
    }

    /**
     * Every part but the last holds exactly the entries up to the next one: a gap is a lost part. A part shorter than
     * that is where a power loss cut the log while it moved on to a new part: that part becomes the last, with a torn
     * tail, and the parts after it are set aside.
     */
    private void checkContiguous() throws IOException {
        Map.Entry<Long, PartFile> prev = null;
        for (Map.Entry<Long, PartFile> e : parts.entrySet()) {
            if (prev != null && prev.getKey() + partEntries < e.getKey())
                throw new CorruptionException("archive file part is missing", partPath(path, prev.getKey() + partEntries), 0);
            long size = prev == null ? 0 : sizes.get(prev.getKey());
            if (prev != null && size > MaplogDescriptor.entryOffset(e.getKey() - prev.getKey()))
                throw new CorruptionException("archive file holds " + (size - HEADER) / ENTRY + " entries but the next part starts at "
                        + e.getKey(), prev.getValue().path(), 0);
            if (prev != null && size < MaplogDescriptor.entryOffset(e.getKey() - prev.getKey())) {
                for (PartFile later : new ArrayList<>(parts.tailMap(e.getKey(), true).values())) {
                    pastShortPart.add(later.path());
                    later.close();
                }
                parts.tailMap(e.getKey(), true).clear();
                return;
            }
            prev = e;
        }
    }

    /**
     * Deletes the parts open set aside, the last first, each deletion durable before the next: a crash or a power cut
     * here leaves a shorter run, never a gap.
     */
    static void deleteSetAside(FileIOFactory io, List<Path> setAside, String what) {
        for (int i = setAside.size() - 1; i >= 0; i--) {
            Path p = setAside.get(i);
            LOG.warn("archive file {}: {} is deleted", p, what);
            try {
                io.deleteDurably(p);
            } catch (IOException e) {
                throw new StorageException("cannot delete an archive file part: " + e.getMessage(), p, e);
            }
        }
        setAside.clear();
    }
}
