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
    static final String CAPTURE_BUFFER_SIZE = "capture-buffer-size";
    static final String WAL_SEGMENT_SIZE = "wal-segment-size";
    static final String RECOVERY_MODE = "recovery-mode";
    static final String RECOVERY_COMPRESSION = "recovery-compression";
    static final String WAL_SYNC_MODE = "wal-sync-mode";
    static final String RETENTION = "retention";

    /** Each attribute with its Varve field, the name {@code VarveConfig} gives in its errors. */
    private static final String[][] FIELDS = {
            {"path", PATH}, {"dataRegionSize", DATA_REGION_SIZE}, {"checkpointBufferSize", CHECKPOINT_BUFFER_SIZE},
            {"captureBufferSize", CAPTURE_BUFFER_SIZE},
            {"walSegmentSize", WAL_SEGMENT_SIZE}, {"recoveryMode", RECOVERY_MODE}, {"recoveryCompression", RECOVERY_COMPRESSION},
            {"walSyncMode", WAL_SYNC_MODE}, {"retention", RETENTION},
    };

    /**
     * Varve's message about a field, naming the XML attribute too: {@code "dataRegionSize must be ..."} becomes
     * {@code "data-region-size (dataRegionSize) must be ..."}, so a user of either form finds the setting.
     */
    static String withAttributeName(String varveMessage) {
        if (varveMessage == null) return null;
        for (String[] f : FIELDS) {
            if (varveMessage.startsWith(f[0] + " ") && !f[0].equals(f[1]))
                return f[1] + " (" + f[0] + ")" + varveMessage.substring(f[0].length());
        }
        return varveMessage;
    }

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
