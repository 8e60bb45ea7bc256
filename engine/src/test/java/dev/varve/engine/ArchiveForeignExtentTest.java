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
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A ranked extent copied in from another store of the same shape — whole, every CRC right, its snapshot id and level
 * the ones this store expects — is refused at open, naming the file and both ids, before anything on disk changes, and
 * {@code verify} reports it; an extent of the format before the store tag (version 1) still opens and is read.
 */
@Timeout(120)
class ArchiveForeignExtentTest {
    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir) {
        return ArchiveDamageTest.config(dir);
    }

    /** ArchiveDamageTest's store: snapshots at two levels, one raised and copied into a ranked extent; id → batches held. */
    private static Map<Long, Long> build(Path dir) {
        return ArchiveDamageTest.build(dir);
    }

    private static void assertReadsRight(Path dir, Map<Long, Long> at) {
        try (Varve store = Varve.open(config(dir), UnforcedFileIOFactory.INSTANCE)) {
            assertNull(KillWorkload.diff(store, KillWorkload.model(at.get(-1L))));
            for (SnapshotInfo s : store.snapshots()) {
                if (!at.containsKey(s.id())) continue;
                try (SnapshotView view = store.asOf(s.id())) {
                    assertNull(KillWorkload.diff(view::table, KillWorkload.model(at.get(s.id()))), "snapshot " + s.id());
                }
            }
        }
    }

    private static List<Path> extents(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir.resolve("archive"))) {
            List<Path> out = s.filter(p -> p.getFileName().toString().startsWith("extent-")).sorted().toList();
            assertFalse(out.isEmpty(), "a ranked extent exists");
            return out;
        }
    }

    /** Where the tag of an extent of a {@code k}-level archive lies (RankedExtentDescriptor, version 2): after the pins. */
    private static int tagOffset(int k) {
        return 36 + 8 * k;
    }

    private static int levelsOf(Path extent) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(extent)).order(ByteOrder.LITTLE_ENDIAN).getInt(28);
    }

    @Test
    void aRankedExtentOfAnotherStoreIsRefusedByOpenAndReportedByVerify() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        Map<Long, Long> at = build(a);
        build(b); // the same workload: the same snapshot ids, levels and extent names
        Path target = extents(a).get(0);
        Path foreign = b.resolve(a.relativize(target));
        long idB = WalForeignSegmentTest.storeId(b);
        int k = levelsOf(foreign);
        assertEquals(StoreTag.of(idB), ByteBuffer.wrap(Files.readAllBytes(foreign)).order(ByteOrder.LITTLE_ENDIAN).getInt(tagOffset(k)),
                "the extent records its store");
        ForeignFileSwap.assertRefused(a, target, foreign, idB, "ranked extent", ArchiveForeignExtentTest::config, tmp.resolve("a-own.dat"));
        assertReadsRight(a, at);
    }

    /** An extent of version 1 (no tag, its CRC right after the pins) opens and serves its snapshot. */
    @Test
    void aVersion1ExtentStillOpens() throws Exception {
        Path a = tmp.resolve("a");
        Map<Long, Long> at = build(a);
        for (Path extent : extents(a)) rewriteAsVersion1(extent);
        assertReadsRight(a, at);
        assertTrue(StoreVerifier.verify(config(a)).damage().isEmpty(), () -> StoreVerifier.verify(config(a)).damage().toString());
    }

    /** Drops the tag: version 1, the CRC over the header up to the pins' end where the tag was, the records moved up. */
    private static void rewriteAsVersion1(Path extent) throws IOException {
        byte[] b = Files.readAllBytes(extent);
        int tagAt = tagOffset(levelsOf(extent));
        ByteBuffer out = ByteBuffer.allocate(b.length - 4).order(ByteOrder.LITTLE_ENDIAN);
        out.put(b, 0, tagAt).putInt(0).put(b, tagAt + 8, b.length - tagAt - 8);
        out.putInt(8, 1);
        CRC32C crc = new CRC32C();
        crc.update(out.array(), 0, tagAt);
        out.putInt(tagAt, (int) crc.getValue());
        try (FileChannel ch = FileChannel.open(extent, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(out.clear());
        }
    }
}
