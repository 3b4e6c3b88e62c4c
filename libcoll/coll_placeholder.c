typedef int coll_placeholder_unused;
