package dev.varve.core.memory;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.store.PageStore;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * A page memory of {@link #FRAMES} frames of {@link #PAGE} bytes over a real page store in a temporary directory: a
 * test opens it with {@link #open}, and it is closed after each test.
 */
abstract class PageMemoryFixture {
    static final int PAGE = 1024;
    /** The smallest region page memory accepts (4 x 320 slack frames). */
    static final int FRAMES = 1280;

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

    @AfterEach
    void close() {
        if (memory != null) memory.close();
        if (store != null) store.close();
    }
}
