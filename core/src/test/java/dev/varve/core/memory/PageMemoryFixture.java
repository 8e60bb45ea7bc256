package dev.varve.core.memory;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A page memory of {@link #FRAMES} frames of {@link #PAGE} bytes over a real page store in a temporary directory: a
 * test opens it with {@link #open}, and it is closed after each test. Pages of file {@link #FILE} are written and
 * read back through it with bodies made from their index and a version ({@link #body}), and checkpointed by hand.
 */
abstract class PageMemoryFixture {
    static final int PAGE = 1024;
    /** The smallest region page memory accepts (4 x 320 slack frames). */
    static final int FRAMES = 1280;
    static final int FILE = PageId.fileId(2, 5);

    @TempDir
    Path dir;

    PageStore store;
    PageMemory memory;
    private final int checkpointBufferPages;

    /** A fixture whose page memory has a checkpoint buffer of {@code checkpointBufferPages} pages. */
    PageMemoryFixture(int checkpointBufferPages) {
        this.checkpointBufferPages = checkpointBufferPages;
    }

    void open() {
        store = new PageStore(FileIOFactory.standard(), dir.resolve("pages"), PAGE);
        memory = new PageMemory(store, (long) FRAMES * PAGE, (long) checkpointBufferPages * PAGE);
    }

    static long id(int index) {
        return PageId.of(FILE, index);
    }

    /** Deterministic body of page {@code index}, version {@code version}. */
    static byte[] body(int index, int version) {
        byte[] b = new byte[PAGE - PageHeader.SIZE];
        long x = index * 0x9E3779B97F4A7C15L + version * 0xC2B2AE3D27D4EB4FL + 1;
        for (int i = 0; i < b.length; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = (byte) x;
        }
        return b;
    }

    void writeNew(int index, int version) {
        Page p = memory.acquireNew(id(index));
        try {
            p.type(PageHeader.TYPE_LEAF);
            p.putBytes(PageHeader.SIZE, body(index, version), 0, PAGE - PageHeader.SIZE);
        } finally {
            memory.releaseWrite(p);
        }
    }

    byte[] read(int index) {
        Page p = memory.acquireRead(id(index));
        try {
            byte[] b = new byte[PAGE - PageHeader.SIZE];
            p.getBytes(PageHeader.SIZE, b, 0, b.length);
            assertEquals(id(index), p.pageId(), "page id in the header");
            return b;
        } finally {
            memory.releaseRead(p);
        }
    }

    /** A hand-run checkpoint: every held page's mark image stamped and written to its file. Returns the page count. */
    int flush() {
        memory.markCheckpoint();
        List<Frame> set = memory.markedPages();
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        for (Frame f : set) {
            memory.copyCheckpointImage(f, image, 0);
            PageChecksum.stamp(image, 0, PAGE);
            store.write(f.heldPageId(), image, 0);
            memory.finishCheckpointPage(f);
        }
        return set.size();
    }

    /** Writes new pages {@code from} to {@code to - 1} (version 1), a checkpoint every 256 and one at the end: all clean. */
    void writeClean(int from, int to) {
        for (int i = from; i < to; i++) {
            writeNew(i, 1);
            if (i % 256 == 255) flush();
        }
        flush();
    }

    @AfterEach
    void close() {
        if (memory != null) memory.close();
        if (store != null) store.close();
    }
}
