typedef int ft_placeholder_unused;
