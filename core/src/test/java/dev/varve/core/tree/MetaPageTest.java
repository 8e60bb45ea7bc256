package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A tree of another format version is refused as such: not as damage, and with the way to carry its data across. */
@Timeout(30)
class MetaPageTest {
    @Test
    void anotherTreeFormatVersionIsRefusedAsUnsupported() {
        Page meta = new Page(ByteBuffer.allocateDirect(4096), 0, 4096);
        meta.type(PageHeader.TYPE_META);
        MetaPage.init(meta, 1, 2);
        MetaPage.check(meta, 7);
        meta.putInt(MetaPage.VERSION_OFFSET, MetaPage.VERSION - 1);
        CorruptTreeException e = assertThrows(CorruptTreeException.class, () -> MetaPage.check(meta, 7));
        assertTrue(e.getMessage().contains("unsupported B+tree format version " + (MetaPage.VERSION - 1)) && e.getMessage().contains("varve dump"),
                e.getMessage());
    }

    /**
     * A height the file cannot hold (one level per page but the meta page) is damage, refused before it sizes a
     * reader's per-level arrays: a height of two billion made a scan allocate 24 GB.
     */
    @Test
    void aHeightTheFileCannotHoldIsRefused() {
        Page meta = new Page(ByteBuffer.allocateDirect(4096), 0, 4096);
        MetaPage.init(meta, 1, 2);
        MetaPage.check(meta, 7); // a root leaf in a file of two pages
        MetaPage.height(meta, 2);
        assertThrows(CorruptTreeException.class, () -> MetaPage.check(meta, 7));
        MetaPage.pageCount(meta, 3);
        MetaPage.check(meta, 7);
        for (int height : new int[] {0, -1, Integer.MAX_VALUE}) {
            MetaPage.height(meta, height);
            CorruptTreeException e = assertThrows(CorruptTreeException.class, () -> MetaPage.check(meta, 7));
            assertTrue(e.getMessage().contains("tree height " + height), e.getMessage());
        }
        MetaPage.pageCount(meta, Integer.MIN_VALUE);
        MetaPage.height(meta, 1);
        assertThrows(CorruptTreeException.class, () -> MetaPage.check(meta, 7));
    }
}
