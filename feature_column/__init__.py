"""The feature-column domain: recognising column chains in cluster specs and fusing them.

``SPEC_REWRITES`` is the ordered list codegen applies to every cluster spec before it generates
code; each rewrite takes a spec and returns (spec, number of rewrites).
"""
from .bag_layer import fuse_bag_layers
from .bucket_bag import fuse_bucket_bags
from .embedding_bag import fuse_embedding_bags
from .hashed_id_filter import drop_hashed_id_filters
from .int_bag import fuse_int_bags
from .int_hash import fuse_int_hashes
from .pooled_gather import fuse_pooled_gathers
from .sparse_string_bag import fuse_sparse_string_bags
from .spec import outputs_past_identities
from .string_bag import fuse_string_bags
from .vocabulary_bag import fuse_vocabulary_bags
from .vocabulary_oov import fuse_vocabulary_buckets
from .weighted_bag import fuse_weighted_bags, fuse_weighted_columns

# outputs_past_identities first: generate.py's in-place writers fill TF's output buffer only for a
# layer node that is itself an output, not one behind a returned Identity. fuse_weighted_bags reads the
# tails fuse_embedding_bags leaves (weights make them SegmentSums), which no later rewrite reads.
# fuse_sparse_string_bags and fuse_string_bags read the bags and the filter-free ids the earlier
# two leave (over SparseTensor and dense strings), fuse_bag_layers
# the string bags; the filter rewrite reads AsString + StringToHashBucketFast chains, which
# fuse_int_hashes then replaces. fuse_vocabulary_buckets reads a frozen lookup's select, which none
# of the others reads; fuse_weighted_columns reads the weighted tails over ids those two made (or
# over hashed strings, plain lookups, integers), fuse_vocabulary_bags the bags over its lookups and
# over plain ones, fuse_bucket_bags the bags over Bucketize's ids, fuse_int_bags those over integers
# or their lookups.
SPEC_REWRITES = [outputs_past_identities, fuse_embedding_bags, fuse_weighted_bags, fuse_pooled_gathers,
                 drop_hashed_id_filters, fuse_sparse_string_bags, fuse_string_bags, fuse_bag_layers, fuse_int_hashes,
                 fuse_vocabulary_buckets, fuse_weighted_columns, fuse_vocabulary_bags, fuse_bucket_bags, fuse_int_bags]
