package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.store.StoreTag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Pagelog segment or a Maplog part of the snapshot archive copied in from another store of the same shape — whole,
 * every CRC right, its records the other store's page versions or mappings — is refused at open, naming the file and
 * both stores' ids, before anything on disk changes, and {@code verify} reports it; segments and parts that name no
 * store (an earlier format) still open and serve their snapshots.
 */
@Timeout(120)
class ArchiveForeignSegmentTest {
    private static final int KEYS = 300;
    private static final int ROUNDS = 4;
    /** Where a Pagelog segment header keeps its store tag (PagelogDescriptor, version 5) and its CRC. */
    private static final int TAG_OFFSET = 20;
    private static final int HEADER_CRC_OFFSET = 28;
    /** Where a Maplog-format log part's header keeps its store tag (MaplogDescriptor, version 2); its CRC is at 28 too. */
    private static final int LOG_TAG_OFFSET = 24;
    private static final long LOG_MAGIC = 0x564152564d41504cL;

    @TempDir
    Path tmp;

    /**
     * Small archive segments (256 KiB), so that a few snapshots of 300 pages' worth fill several, and small Skippy
     * nodes, so that the Maplog's parts (a segment's worth of mappings, in whole nodes) are several too.
     */
    static VarveConfig config(Path dir) {
        return FixtureSupport.small(dir).partitions(1).archiveSegmentSize(256L << 10).skippyNodeEntries(16).build();
    }

    private static byte[] value(int salt, int round, int key) {
        return FixtureSupport.bytes(salt + round * 10_000L + key, 2000);
    }

    /** Rounds of overwrites, a snapshot before each: round r's values are what snapshot r sees. */
    private static long[] write(Path dir, int salt) {
        long[] snapshots = new long[ROUNDS];
        try (Varve store = Varve.open(config(dir), UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            for (int round = 0; round < ROUNDS; round++) {
                for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), value(salt, round, k));
                snapshots[round] = store.snapshotNow();
            }
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), value(salt, ROUNDS, k));
        }
        return snapshots;
    }

    /** The last round's value of key {@code k} with one byte changed. */
    private static byte[] touched(int k) {
        byte[] v = value(0, ROUNDS, k);
        v[k % v.length] ^= 1;
        return v;
    }

    private static void assertSnapshots(Varve store, long[] snapshots, int salt) {
        for (int round = 0; round < ROUNDS; round++) {
            Table t = store.asOf(snapshots[round]).table("t");
            for (int k = 0; k < KEYS; k += 37) assertArrayEquals(value(salt, round, k), t.get(FixtureSupport.utf8("k" + k)), "round " + round + " key " + k);
        }
    }

    static List<Path> pagelogSegments(Path store) throws IOException {
        try (Stream<Path> s = Files.list(store.resolve("archive").resolve("level-1"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("pagelog-")).sorted().toList();
        }
    }

    private static int tag(Path segment) throws IOException {
        return tagAt(segment, TAG_OFFSET);
    }

    private static int tagAt(Path file, int offset) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN).getInt(offset);
    }

    /** The Maplog's parts after its first ({@code maplog-L0.log.<first position>}), in position order. */
    private static List<Path> laterMaplogParts(Path store) throws IOException {
        try (Stream<Path> s = Files.list(store.resolve("archive").resolve("level-1"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("maplog-L0.log."))
                    .sorted(java.util.Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString().substring("maplog-L0.log.".length()))))
                    .toList();
        }
    }

    /** Every Maplog-format log part of the archive (the Maplog and Skippy levels, uplinks, drops, joins, moves, marks). */
    private static List<Path> logParts(Path store) throws IOException {
        try (Stream<Path> s = Files.walk(store.resolve("archive"))) {
            return s.filter(Files::isRegularFile).filter(p -> {
                try {
                    byte[] b = Files.readAllBytes(p);
                    return b.length >= 32 && ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(0) == LOG_MAGIC;
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).sorted().toList();
        }
    }

    @Test
    void aPagelogSegmentOfAnotherStoreIsRefusedByOpenAndReportedByVerify() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        long[] snapshots = write(a, 0);
        write(b, 1_000_000); // the same shape: the same segments and record positions, other values
        List<Path> segments = pagelogSegments(a);
        assertTrue(segments.size() >= 2, "segments " + segments);
        Path target = segments.get(0);
        Path foreign = b.resolve("archive").resolve("level-1").resolve(target.getFileName());
        long idB = WalForeignSegmentTest.storeId(b);
        assertEquals(StoreTag.of(idB), tag(foreign), "the segment records its store");
        ForeignFileSwap.assertRefused(a, target, foreign, idB, "Pagelog segment", ArchiveForeignSegmentTest::config, tmp.resolve("a-own.log"));
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
        }
    }

    @Test
    void aMaplogPartOfAnotherStoreIsRefusedByOpenAndReportedByVerify() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        long[] snapshots = write(a, 0);
        write(b, 1_000_000);
        long idB = WalForeignSegmentTest.storeId(b);
        // the first part was created with the store, before its id was durable: it names no store; later ones do
        assertEquals(0, tagAt(b.resolve("archive").resolve("level-1").resolve("maplog-L0.log"), LOG_TAG_OFFSET));
        List<Path> parts = laterMaplogParts(a);
        assertTrue(parts.size() >= 2, "parts " + parts);
        Path target = parts.get(1);
        Path foreign = b.resolve("archive").resolve("level-1").resolve(target.getFileName());
        assertEquals(StoreTag.of(idB), tagAt(foreign, LOG_TAG_OFFSET), "the part records its store");
        ForeignFileSwap.assertRefused(a, target, foreign, idB, "archive log", ArchiveForeignSegmentTest::config, tmp.resolve("a-own.log"));
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
        }
    }

    /** Log parts of the format before the store tag (version 1: the field reserved) open, serve and take new parts. */
    @Test
    void logPartsThatNameNoStoreStillOpen() throws Exception {
        Path a = tmp.resolve("a");
        long[] snapshots = write(a, 0);
        List<Path> parts = logParts(a);
        assertTrue(parts.stream().anyMatch(p -> p.getFileName().toString().startsWith("maplog-L0.log.")), "parts " + parts);
        for (Path part : parts) rewriteHeader(part, 1, LOG_TAG_OFFSET);
        long later;
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), touched(k));
            later = store.snapshotNow();
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), value(0, ROUNDS + 1, k));
        }
        assertTrue(logParts(a).size() > parts.size(), "new parts beside the version 1 ones");
        assertTrue(StoreVerifier.verify(config(a)).damage().isEmpty(), () -> StoreVerifier.verify(config(a)).damage().toString());
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
            Table t = store.asOf(later).table("t");
            for (int k = 0; k < KEYS; k++) assertArrayEquals(touched(k), t.get(FixtureSupport.utf8("k" + k)), "key " + k);
        }
    }

    /** Segments of the format before the store tag (version 4: the segment number a long) open and serve their snapshots. */
    @Test
    void pagelogSegmentsThatNameNoStoreStillOpen() throws Exception {
        Path a = tmp.resolve("a");
        long[] snapshots = write(a, 0);
        for (Path segment : pagelogSegments(a)) rewriteAsVersion4(segment);
        long touched;
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
            // a byte of each value changed: the pre-states this build archives after version 4 segments (diffs where
            // they are small, into the last one while it has room) read back as the snapshot saw them
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), touched(k));
            touched = store.snapshotNow();
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), value(0, ROUNDS + 1, k));
        }
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertSnapshots(store, snapshots, 0);
            Table t = store.asOf(touched).table("t");
            for (int k = 0; k < KEYS; k++) assertArrayEquals(touched(k), t.get(FixtureSupport.utf8("k" + k)), "key " + k);
        }
    }

    /** The version 4 header of this segment: version 4, no tag (the segment number's upper half), CRC over [0, 28). */
    private static void rewriteAsVersion4(Path segment) throws IOException {
        rewriteHeader(segment, 4, TAG_OFFSET);
    }

    /** The 32-byte header of {@code file} as {@code version} wrote it: no tag at {@code tagAt}, CRC over [0, 28). */
    private static void rewriteHeader(Path file, int version, int tagAt) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(h, 0);
            h.putInt(8, version).putInt(tagAt, 0);
            CRC32C crc = new CRC32C();
            crc.update(h.array(), 0, HEADER_CRC_OFFSET);
            h.putInt(HEADER_CRC_OFFSET, (int) crc.getValue());
            ch.write(h.clear(), 0);
        }
    }
}
