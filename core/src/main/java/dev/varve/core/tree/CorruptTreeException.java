package dev.varve.core.tree;

import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;

/**
 * A partition's B+tree pages do not form a valid tree: a wrong page type, a broken chain, keys out of order, page
 * accounting that does not add up. Names the page (file and index) where the problem was found.
 */
public class CorruptTreeException extends StorageException {
    private static final long serialVersionUID = 1L;
    private final long pageId;

    /** A problem found on page {@code pageId} (may be {@link PageId#NONE} when no single page is to blame). */
    public CorruptTreeException(String what, long pageId) {
        super(what + " [page " + PageId.toString(pageId) + "]", (Throwable) null);
        this.pageId = pageId;
    }

    /**
     * A failure known by its message alone, {@link #pageId()} {@link PageId#NONE} (the message names it): how Infinispan rebuilds an
     * exception that crossed from another node — class name, message and cause — so that a caller on another node of
     * a cluster learns that a store's disk is full instead of waiting out its timeout.
     */
    public CorruptTreeException(String message) {
        this(message, null);
    }

    /** {@link #CorruptTreeException(String)} with the failure's cause. */
    public CorruptTreeException(String message, Throwable cause) {
        super(message, cause);
        this.pageId = PageId.NONE;
    }

    /** The page the problem was found on, or {@link PageId#NONE}. */
    public long pageId() {
        return pageId;
    }
}
