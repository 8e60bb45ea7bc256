package dev.varve.core.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pin, latch, evict, no-steal, copy-on-write and checksum basics of {@link PageMemory} over a real {@link PageStore},
 * and its {@link PageCopier}: copies of what memory reads, without loading pages, never of a damaged page.
 */
@Timeout(180)
class PageMemoryTest extends PageMemoryFixture {

    PageMemoryTest() {
        super(16);
    }

    private void rewrite(int index, int version) {
        Page p = memory.acquireWrite(id(index));
        try {
            p.putBytes(PageHeader.SIZE, body(index, version), 0, PAGE - PageHeader.SIZE);
        } finally {
            memory.releaseWrite(p);
        }
    }

    private static void flipByte(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, offset);
            one.put(0, (byte) (one.get(0) ^ 0x10)).rewind();
            ch.write(one, offset);
        }
    }

    @Test
    void cleanPageIsEvictedAndReReadWithIdenticalContent() {
        open();
        int pages = 3 * FRAMES;
        writeClean(0, pages);
        assertEquals(0, memory.heldPages());
        assertTrue(memory.pagesEvicted() >= pages - FRAMES, "evicted " + memory.pagesEvicted() + " of " + pages + " pages through "
                + FRAMES + " frames");
        // page 0 was written first: long evicted. Reading it goes to disk and yields exactly what was written.
        long readsBefore = memory.pagesRead();
        assertArrayEquals(body(0, 1), read(0));
        assertEquals(readsBefore + 1, memory.pagesRead(), "page 0 must have been re-read from its file");
        assertArrayEquals(body(0, 1), read(0));
        assertEquals(readsBefore + 1, memory.pagesRead(), "a resident page is not read again");
        for (int i = 0; i < pages; i++) assertArrayEquals(body(i, 1), read(i), "page " + i);
        assertTrue(memory.pagesRead() >= pages - FRAMES);
    }

    @Test
    void framesAreMadeAsPagesFirstNeedThemNotAtOpen() {
        open();
        assertEquals(0, memory.framesMade(), "frames made at open");
        for (int i = 0; i < 10; i++) writeNew(i, 1);
        assertArrayEquals(body(3, 1), read(3));
        assertEquals(10, memory.framesMade(), "ten pages, one frame each; a resident page needs none");
        writeClean(10, 2 * FRAMES);
        assertEquals(FRAMES, memory.framesMade(), "every slot has a frame once the region is full, and no more are made");
    }

    /**
     * Readers racing over a region none of whose frames is made yet: they make frames, lose races to map the same
     * page, and evict while others still make; each reads every page it asks for exactly as written.
     */
    @Test
    void readersRacingToMakeFramesAndEvictReadEveryPageAsWritten() throws Exception {
        open();
        int pages = 3 * FRAMES;
        writeClean(0, pages);
        memory.close();
        memory = new PageMemory(store, (long) FRAMES * PAGE, 16L * PAGE);
        Thread[] readers = new Thread[4];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int t = 0; t < readers.length; t++) {
            SplittableRandom rnd = new SplittableRandom(t);
            readers[t] = new Thread(() -> {
                try {
                    for (int n = 0; n < 4 * pages; n++) {
                        int i = n < FRAMES ? n : rnd.nextInt(pages); // all start on the same pages: races to map them
                        assertArrayEquals(body(i, 1), read(i), "page " + i);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            readers[t].start();
        }
        for (Thread r : readers) r.join();
        if (failure.get() != null) throw new AssertionError("a reader failed", failure.get());
        assertEquals(FRAMES, memory.framesMade(), "every slot made once");
        assertTrue(memory.pagesEvicted() > 0, "the clock ran once every slot had a frame");
    }

    @Test
    void dirtyPageIsNeverEvictedAcquireWaitsAndCallsForACheckpoint() throws Exception {
        open();
        AtomicInteger pressure = new AtomicInteger();
        memory.onPressure(pressure::incrementAndGet);
        for (int i = 0; i < FRAMES; i++) writeNew(i, 1);
        assertEquals(FRAMES, memory.heldPages(), "every frame holds a dirty page");
        assertEquals(FRAMES, memory.dirtyPages());

        // one more page needs a frame: no clean page exists, so the acquire must wait (never evict a dirty page)
        CompletableFuture<Void> extra = CompletableFuture.runAsync(() -> writeNew(FRAMES, 1));
        assertThrows(TimeoutException.class, () -> extra.get(500, TimeUnit.MILLISECONDS), "an acquire evicted a dirty page");
        assertEquals(0, memory.pagesEvicted(), "no-steal: a dirty page was evicted");
        assertTrue(pressure.get() > 0, "a waiting acquire must call for a checkpoint");
        // the dirty pages are still all there, unchanged, without a disk read (they were never written to disk)
        for (int i = 0; i < 10; i++) assertArrayEquals(body(i, 1), read(i));
        assertEquals(0, memory.pagesRead());

        // a checkpoint makes them clean: the waiting acquire now evicts one and finishes
        assertEquals(FRAMES, flush());
        extra.get(30, TimeUnit.SECONDS);
        assertEquals(1, memory.pagesEvicted());
        assertEquals(1, memory.heldPages());
        for (int i = 0; i <= FRAMES; i++) assertArrayEquals(body(i, 1), read(i), "page " + i);
    }

    @Test
    void headroomAccounting() {
        open();
        int slack = Math.max(320, FRAMES / 16);
        int limit = FRAMES - slack;
        assertThrows(IllegalArgumentException.class, () -> memory.tryReserve(limit + 1), "larger than the region can ever give");
        assertTrue(memory.tryReserve(limit));
        assertFalse(memory.tryReserve(1), "reservations beyond the limit");
        memory.releaseHeadroom(limit);
        for (int i = 0; i < 100; i++) writeNew(i, 1);
        assertEquals(100, memory.heldPages());
        assertFalse(memory.tryReserve(limit - 99), "dirty pages count against head-room");
        assertTrue(memory.tryReserve(limit - 100));
        memory.releaseHeadroom(limit - 100);
        flush();
        assertEquals(0, memory.heldPages());
        assertTrue(memory.tryReserve(limit), "a checkpoint gives head-room back");
        memory.releaseHeadroom(limit);
        memory.awaitHeadroom(10); // returns at once
        memory.releaseHeadroom(10);
    }

    @Test
    void pageChangedBetweenTheMarkAndTheCheckpointTakingItsPagesYieldsItsMarkImage() {
        // the mark only swaps lists; the first writer to change a marked page makes it the checkpoint's (copy-on-write)
        open();
        writeNew(7, 1);
        writeNew(8, 1);
        memory.markCheckpoint();
        assertEquals(0, memory.dirtyPages(), "marked pages are clean for the next checkpoint");
        rewrite(7, 2);
        assertEquals(1, memory.copyOnWritePages(), "the writer preserved the mark image first");
        assertEquals(1, memory.dirtyPages(), "page 7 is dirty again, for the next checkpoint");
        List<Frame> set = memory.markedPages();
        assertEquals(List.of(id(7), id(8)), set.stream().map(Frame::heldPageId).toList(), "both pages are the checkpoint's");
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        memory.copyCheckpointImage(set.get(0), image, 0);
        byte[] mark = new byte[PAGE - PageHeader.SIZE];
        image.get(PageHeader.SIZE, mark);
        assertArrayEquals(body(7, 1), mark, "the checkpoint image is the state at the mark");
        assertArrayEquals(body(7, 2), read(7), "the frame holds the new content");
    }

    /**
     * A writer that changed a marked page after the mark holds its latch while it waits for a checkpoint-buffer slot
     * for another page (removing a 1 MiB value frees its chain under the leaf's latch); the checkpoint taking its pages
     * must not wait for that latch, as nothing frees a slot before it has them. It waited, and the writer gave up after
     * 120 s (LargeChangeDuringCheckpointTest, once in a few runs).
     */
    @Test
    void markedPagesDoNotWaitForTheLatchOfAPageAWriterChanged() throws Exception {
        open();
        writeNew(7, 1);
        writeNew(8, 1);
        memory.markCheckpoint();
        Page held = memory.acquireWrite(id(7)); // the mark image copied on write; the latch stays held
        try {
            List<Frame> set = CompletableFuture.supplyAsync(memory::markedPages).get(20, TimeUnit.SECONDS);
            assertEquals(List.of(id(7), id(8)), set.stream().map(Frame::heldPageId).toList(), "both pages are the checkpoint's");
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            memory.copyCheckpointImage(set.get(0), image, 0); // from the writer's copy: no latch
            byte[] mark = new byte[PAGE - PageHeader.SIZE];
            image.get(PageHeader.SIZE, mark);
            assertArrayEquals(body(7, 1), mark, "the checkpoint image is the state at the mark");
        } finally {
            memory.releaseWrite(held);
        }
    }

    @Test
    void pageChangedDuringCheckpointYieldsItsMarkImage() {
        open();
        writeNew(7, 1);
        writeNew(8, 1);
        memory.markCheckpoint();
        List<Frame> set = memory.markedPages();
        assertEquals(2, set.size());
        Frame f7 = set.get(0);
        assertEquals(id(7), f7.heldPageId());
        assertEquals(0, memory.dirtyPages(), "collected pages are clean for the next checkpoint");
        assertEquals(2, memory.heldPages(), "but still held: their only image is in memory");

        rewrite(7, 2); // after the mark: copy-on-write
        assertEquals(1, memory.copyOnWritePages());
        assertEquals(1, memory.checkpointBufferUsed());
        assertArrayEquals(body(7, 2), read(7), "the frame holds the new content");

        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        memory.copyCheckpointImage(f7, image, 0);
        byte[] mark = new byte[PAGE - PageHeader.SIZE];
        image.get(PageHeader.SIZE, mark);
        assertArrayEquals(body(7, 1), mark, "the checkpoint image is the state at the mark");
        assertArrayEquals(body(7, 2), read(7));
        PageChecksum.stamp(image, 0, PAGE);
        store.write(id(7), image, 0);
        memory.finishCheckpointPage(f7);
        assertEquals(0, memory.checkpointBufferUsed(), "the copy-on-write slot is given back");
        for (Frame f : set.subList(1, set.size())) {
            memory.copyCheckpointImage(f, image, 0);
            PageChecksum.stamp(image, 0, PAGE);
            store.write(f.heldPageId(), image, 0);
            memory.finishCheckpointPage(f);
        }
        assertEquals(1, memory.dirtyPages(), "page 7 changed after the mark: dirty for the next checkpoint");
        assertEquals(1, memory.heldPages());
        // a second change in the same interval copies nothing
        rewrite(7, 3);
        assertEquals(1, memory.copyOnWritePages());

        // the file holds the mark image until the next checkpoint writes version 3
        ByteBuffer disk = ByteBuffer.allocateDirect(PAGE);
        store.read(id(7), disk, 0);
        disk.get(PageHeader.SIZE, mark);
        assertArrayEquals(body(7, 1), mark);
        assertEquals(1, flush());
        store.read(id(7), disk, 0);
        disk.get(PageHeader.SIZE, mark);
        assertArrayEquals(body(7, 3), mark);
    }

    /** Opens, writes pages 0 .. pages - 1 (version 1), checkpoints them and closes; returns their file. */
    private Path writeCheckpointAndClose(int pages) {
        open();
        for (int i = 0; i < pages; i++) writeNew(i, 1);
        flush();
        Path file = store.pathOf(FILE);
        memory.close();
        store.close();
        return file;
    }

    @Test
    void flippedByteOnDiskIsReportedWithFileAndOffset() throws IOException {
        Path file = writeCheckpointAndClose(20);

        int index = 11;
        long pageOffset = (long) (index + 1) * PAGE;
        flipByte(file, pageOffset + 300);

        open();
        for (int attempt = 0; attempt < 2; attempt++) { // a failed load is not cached as data
            CorruptionException e = assertThrows(CorruptionException.class, () -> memory.acquireRead(id(index)));
            assertNotNull(e.getMessage());
            assertTrue(e.getMessage().contains(file.toString()), "message names the file: " + e.getMessage());
            assertTrue(e.getMessage().contains("offset " + pageOffset), "message names the offset " + pageOffset + ": " + e.getMessage());
            assertEquals(file, e.file());
            assertEquals(pageOffset, e.offset());
        }
        assertThrows(CorruptionException.class, () -> memory.acquireWrite(id(index)));
        // the neighbours are intact and no frame leaked
        for (int i = 0; i < 20; i++) if (i != index) assertArrayEquals(body(i, 1), read(i), "page " + i);
        assertEquals(0, memory.heldPages());
    }

    @Test
    void copierCopiesWhatMemoryReadsWithoutLoadingTheFilesPages() {
        int pages = 200;
        writeCheckpointAndClose(pages);
        open(); // nothing resident
        for (int i = 0; i < pages; i += 3) rewrite(i, 2); // every third page dirty and resident
        long readsBefore = memory.pagesRead();
        ByteBuffer copies = ByteBuffer.allocateDirect(pages * PAGE);
        boolean[] checked = new boolean[pages];
        memory.copier().copyOutRun(id(0), pages, copies, 0, checked);
        assertEquals(readsBefore, memory.pagesRead(), "pages read from the file were not loaded into memory");
        for (int i = 0; i < pages; i++) {
            assertEquals(i % 3 != 0, checked[i], "page " + i + ": from its file with its CRC checked, or from its frame");
            byte[] copy = new byte[PAGE - PageHeader.SIZE];
            copies.get(i * PAGE + PageHeader.SIZE, copy);
            assertArrayEquals(body(i, i % 3 == 0 ? 2 : 1), copy, "page " + i);
            assertEquals(id(i), PageChecksum.storedPageId(copies, i * PAGE));
        }
    }

    @Test
    void copierReportsADamagedPageInsteadOfCopyingIt() throws IOException {
        Path file = writeCheckpointAndClose(200);
        flipByte(file, (long) (57 + 1) * PAGE + 300);
        open();
        ByteBuffer copies = ByteBuffer.allocateDirect(200 * PAGE);
        CorruptionException run = assertThrows(CorruptionException.class, () -> memory.copier().copyOutRun(id(0), 200, copies, 0, new boolean[200]));
        assertTrue(run.getMessage().contains("checksum mismatch") && run.getMessage().contains(file.toString()), run.getMessage());
        CorruptionException one = assertThrows(CorruptionException.class, () -> memory.copier().copyOut(id(57), copies, 0));
        assertTrue(one.getMessage().contains("checksum mismatch"), one.getMessage());
    }
}
