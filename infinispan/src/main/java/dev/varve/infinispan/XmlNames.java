package dev.varve.infinispan;

/**
 * The names of the declarative configuration: the {@code varve-store} element and its attributes, the same names
 * the programmatic attributes carry (see {@code schema/varve-infinispan-store-0.1.xsd}).
 */
final class XmlNames {
    /** Namespace prefix of the schema; versions follow the colon. */
    static final String NAMESPACE = "urn:varve:infinispan:store:";
    /** The schema version a serialized configuration names (the parser reads every version). */
    static final String VERSION = "0.1";
    static final String ROOT = "varve-store";
    static final String PATH = "path";
    static final String DATA_REGION_SIZE = "data-region-size";
    static final String CHECKPOINT_BUFFER_SIZE = "checkpoint-buffer-size";
    static final String WAL_SEGMENT_SIZE = "wal-segment-size";
    static final String RECOVERY_MODE = "recovery-mode";
    static final String RECOVERY_COMPRESSION = "recovery-compression";
    static final String WAL_SYNC_MODE = "wal-sync-mode";
    static final String RETENTION = "retention";

    /** The element, as Infinispan's configuration classes want it: an enum whose {@code toString} is the XML name. */
    enum Element {
        VARVE_STORE;

        @Override
        public String toString() {
            return ROOT;
        }
    }

    private XmlNames() {
    }
}
