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
}
