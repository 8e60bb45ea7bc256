package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
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
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static dev.varve.engine.PageFileGenerationTest.assertSame;
import static dev.varve.engine.PageFileGenerationTest.contents;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Pagelog segment of the snapshot archive copied in from another store of the same shape — whole, every CRC right,
 * its records the other store's page versions — is refused at open, naming the file and both stores' ids, before
 * anything on disk changes, and {@code verify} reports it; segments that name no store (an earlier format) still open
 * and serve their snapshots.
 */
@Timeout(120)
class ArchiveForeignSegmentTest {
    private static final int KEYS = 300;
    private static final int ROUNDS = 4;
    /** Where a Pagelog segment header keeps its store tag (PagelogDescriptor, version 5) and its CRC. */
    private static final int TAG_OFFSET = 20;
    private static final int HEADER_CRC_OFFSET = 28;

    @TempDir
    Path tmp;

    /** Small archive segments (256 KiB), so that a few snapshots of 300 pages' worth fill several. */
    static VarveConfig config(Path dir) {
        return FixtureSupport.small(dir).partitions(1).archiveSegmentSize(256L << 10).build();
    }

    private static byte[] value(int salt, int round, int key) {
        return FixtureSupport.bytes(salt + round * 10_000L + key, 2000);
    }

    /** Rounds of overwrites, a snapshot before each: round r's values are what snapshot r sees. */
    private static long[] write(Path dir, int salt) {
        long[] snapshots = new long[ROUNDS];
        try (Varve store = Varve.open(config(dir))) {
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
        return ByteBuffer.wrap(Files.readAllBytes(segment)).order(ByteOrder.LITTLE_ENDIAN).getInt(TAG_OFFSET);
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
        Files.copy(target, tmp.resolve("a-own.log"));
        Files.copy(foreign, target, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(a);
        String idA = String.format("%016x", WalForeignSegmentTest.storeId(a));

        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(a)).close());
        assertTrue(e.getMessage().contains(target.getFileName().toString()) && e.getMessage().contains("Pagelog segment belongs to another store")
                && e.getMessage().contains(idA) && e.getMessage().contains(String.format("%08x", StoreTag.of(idB))), e.getMessage());
        assertSame(before, contents(a));
        assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config(a)).close());
        assertTrue(StoreVerifier.verify(config(a)).damage().stream()
                        .anyMatch(d -> d.file().equals(target) && d.what().contains("belongs to another store") && d.what().contains(idA)),
                () -> StoreVerifier.verify(config(a)).damage().toString());
        assertSame(before, contents(a));
        Files.copy(tmp.resolve("a-own.log"), target, StandardCopyOption.REPLACE_EXISTING);
        try (Varve store = Varve.open(config(a))) {
            assertSnapshots(store, snapshots, 0);
        }
    }

    /** Segments of the format before the store tag (version 4: the segment number a long) open and serve their snapshots. */
    @Test
    void pagelogSegmentsThatNameNoStoreStillOpen() throws Exception {
        Path a = tmp.resolve("a");
        long[] snapshots = write(a, 0);
        for (Path segment : pagelogSegments(a)) rewriteAsVersion4(segment);
        long touched;
        try (Varve store = Varve.open(config(a))) {
            assertSnapshots(store, snapshots, 0);
            // a byte of each value changed: the pre-states this build archives after version 4 segments (diffs where
            // they are small, into the last one while it has room) read back as the snapshot saw them
            Table t = store.table("t");
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), touched(k));
            touched = store.snapshotNow();
            for (int k = 0; k < KEYS; k++) t.put(FixtureSupport.utf8("k" + k), value(0, ROUNDS + 1, k));
        }
        try (Varve store = Varve.open(config(a))) {
            assertSnapshots(store, snapshots, 0);
            Table t = store.asOf(touched).table("t");
            for (int k = 0; k < KEYS; k++) assertArrayEquals(touched(k), t.get(FixtureSupport.utf8("k" + k)), "key " + k);
        }
    }

    /** The version 4 header of this segment: version 4, no tag (the segment number's upper half), CRC over [0, 28). */
    private static void rewriteAsVersion4(Path segment) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(h, 0);
            h.putInt(8, 4).putInt(TAG_OFFSET, 0);
            CRC32C crc = new CRC32C();
            crc.update(h.array(), 0, HEADER_CRC_OFFSET);
            h.putInt(HEADER_CRC_OFFSET, (int) crc.getValue());
            ch.write(h.clear(), 0);
        }
    }
}
