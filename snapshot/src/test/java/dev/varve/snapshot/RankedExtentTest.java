package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.util.LongLongMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A ranked extent written with diffs and whole pages reads every page back, and says what it pins. */
@Timeout(60)
class RankedExtentTest {
    private static final int PAGE = 4096;
    private static final FileIOFactory IO = FileIOFactory.standard();

    @TempDir
    Path dir;

    /** Page 1 whole (no base), page 2 a small diff against level 1's address 5, page 3 too different: whole. */
    private RankedExtent writeThree(ByteBuffer[] images, ByteBuffer baseImage) {
        RankedExtent.Writer w = new RankedExtent.Writer(IO, dir, 7, 2, 2, PAGE);
        w.add(1, images[0], null, RankedExtentDescriptor.NO_BASE, 0, RankedExtentDescriptor.NO_PIN);
        w.add(2, images[1], baseImage, ArchiveEncoding.location(1, 5), 1, 5);
        w.add(3, images[2], baseImage, ArchiveEncoding.location(1, 6), 1, 6);
        assertEquals(3, w.records());
        return w.finish();
    }

    @Test
    void everyPageReadsBackFromItsBaseAndRanges() {
        Random random = new Random(11);
        ByteBuffer baseImage = page(random);
        ByteBuffer small = ByteBuffer.wrap(baseImage.array().clone());
        for (int i = 200; i < 260; i++) small.put(i, (byte) (small.get(i) + 1));
        ByteBuffer[] images = {page(random), small, page(random)};
        RankedExtent extent = writeThree(images, baseImage);
        long payload = extent.bytes() - RankedExtentDescriptor.headerSize(2) - 3 * (RankedExtentDescriptor.RECORD_HEADER_SIZE + RankedExtentDescriptor.RANGE_SIZE);
        assertEquals(2 * PAGE + 60, payload, "two whole pages and one 60-byte range");

        assertEquals(7, extent.snapshot());
        assertEquals(2, extent.level());
        assertEquals(RankedExtent.pathOf(dir, 7), extent.path());
        assertEquals(7, RankedExtent.snapshotOf(extent.path()));
        assertEquals(5, extent.pin(1), "the diff's base pins level 1 from address 5");
        assertEquals(RankedExtentDescriptor.NO_PIN, extent.pin(2));
        assertFalse(Files.exists(extent.path().resolveSibling(extent.path().getFileName() + RankedExtentDescriptor.TEMP_SUFFIX)));
        extent.verify(IO, 7, 2);

        LongLongMap index = new LongLongMap(4);
        List<Long> basesAsked = new ArrayList<>();
        try (RankedExtent.Reader r = extent.reader(IO)) {
            r.index(index);
            assertEquals(3, index.size());
            for (int p = 1; p <= 3; p++) {
                long location = index.get(p, -1);
                assertTrue(ArchiveEncoding.isExtent(location));
                ByteBuffer dst = ByteBuffer.allocate(PAGE);
                r.read(ArchiveEncoding.extentOffset(location), p, dst, 0, (base, pageId, into, at) -> {
                    basesAsked.add(base);
                    into.put(at, baseImage, 0, PAGE);
                });
                assertArrayEquals(images[p - 1].array(), dst.array(), "page " + p);
            }
        }
        assertEquals(List.of(ArchiveEncoding.location(1, 5)), basesAsked, "only the diff reads a base");
    }

    @Test
    void anExtentOfAnotherSnapshotOrLevelIsRefused() {
        Random random = new Random(12);
        RankedExtent extent = writeThree(new ByteBuffer[]{page(random), page(random), page(random)}, page(random));
        CorruptionException e = assertThrows(CorruptionException.class, () -> extent.verify(IO, 8, 2));
        assertEquals(extent.path(), e.file());
        assertEquals(RankedExtentDescriptor.SNAPSHOT_OFFSET, e.offset());
        assertThrows(CorruptionException.class, () -> extent.verify(IO, 7, 1));
    }

    @Test
    void anExtentOfAnotherPageSizeIsRefused() {
        Random random = new Random(13);
        RankedExtent extent = writeThree(new ByteBuffer[]{page(random), page(random), page(random)}, page(random));
        CorruptionException e = assertThrows(CorruptionException.class, () -> RankedExtent.open(IO, extent.path(), PAGE * 2));
        assertEquals(RankedExtentDescriptor.PAGE_SIZE_OFFSET, e.offset());
    }

    @Test
    void anAbandonedExtentLeavesNoFile() throws Exception {
        RankedExtent.Writer w = new RankedExtent.Writer(IO, dir, 9, 1, 1, PAGE);
        w.add(1, page(new Random(14)), null, RankedExtentDescriptor.NO_BASE, 0, RankedExtentDescriptor.NO_PIN);
        w.abandon();
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count());
        }
    }

    private static ByteBuffer page(Random random) {
        byte[] b = new byte[PAGE];
        random.nextBytes(b);
        return ByteBuffer.wrap(b);
    }
}
